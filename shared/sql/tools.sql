-- Tool registry and index descriptors (shared/selection). Every statement is scoped by entity.

-- name: tool_hashes
SELECT name, content_hash, definition_hash FROM tools WHERE entity_id = %(entity_id)s;

-- name: tool_aliases
-- Read under the registry lock: a new tool's alias is chosen among the ones the entity holds.
SELECT name, alias FROM tools WHERE entity_id = %(entity_id)s;

-- name: tool_count
SELECT count(*) AS n FROM tools WHERE entity_id = %(entity_id)s;

-- name: registry_lock
-- One registration of a kind (tools, indices) per entity at a time, until the transaction ends: the
-- entity's limit is checked under it, so two concurrent registrations cannot both pass it.
SELECT pg_advisory_xact_lock(hashtextextended('edgeindex.registry:' || %(kind)s || ':' || %(entity_id)s, 0));

-- name: tool_count_others
-- The entity's tools a registration does not name (what it adds comes on top of these).
SELECT count(*) AS n FROM tools WHERE entity_id = %(entity_id)s AND NOT (name = ANY(%(names)s));

-- name: tool_upsert
INSERT INTO tools (entity_id, name, alias, description, parameters, category, tags, requires, examples,
                   content_hash, definition_hash, tokens, model_id, embedding, description_embedding)
VALUES (%(entity_id)s, %(name)s, %(alias)s, %(description)s, %(parameters)s, %(category)s, %(tags)s, %(requires)s,
        %(examples)s, %(content_hash)s, %(definition_hash)s, %(tokens)s, %(model_id)s, %(embedding)s,
        %(description_embedding)s)
ON CONFLICT (entity_id, name) DO UPDATE SET
    description = EXCLUDED.description, parameters = EXCLUDED.parameters, category = EXCLUDED.category,
    tags = EXCLUDED.tags, requires = EXCLUDED.requires, examples = EXCLUDED.examples,
    content_hash = EXCLUDED.content_hash, definition_hash = EXCLUDED.definition_hash,
    tokens = EXCLUDED.tokens, model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding,
    description_embedding = EXCLUDED.description_embedding, updated_at = now();

-- name: tool_update_keep_vector
-- The embedded text did not change (only e.g. requires or tags): the stored vector stays.
UPDATE tools SET description = %(description)s, parameters = %(parameters)s, category = %(category)s,
                 tags = %(tags)s, requires = %(requires)s, examples = %(examples)s,
                 definition_hash = %(definition_hash)s, tokens = %(tokens)s, updated_at = now()
WHERE entity_id = %(entity_id)s AND name = %(name)s;

-- name: tool_list
SELECT name, alias, description, parameters, category, tags, requires, examples, tokens, model_id,
       content_hash, created_at, updated_at
FROM tools WHERE entity_id = %(entity_id)s ORDER BY name;

-- name: tool_delete
DELETE FROM tools WHERE entity_id = %(entity_id)s AND name = ANY(%(names)s) RETURNING name;

-- name: tool_catalog
SELECT t.name, t.alias, t.description, t.parameters, t.category, t.tags, t.requires, t.tokens, t.model_id, t.embedding,
       t.description_embedding,
       coalesce(f.used, 0) AS used, coalesce(f.shown, 0) AS shown
FROM tools t LEFT JOIN tool_feedback f ON f.entity_id = t.entity_id AND f.name = t.name
WHERE t.entity_id = %(entity_id)s ORDER BY t.name;

-- name: tool_example_vectors
SELECT name, source, embedding FROM tool_examples WHERE entity_id = %(entity_id)s;

-- name: tool_feedback_counts
-- What a feedback changes, read alone (tools.refresh_learned): counts first, no vectors.
SELECT name, used, shown FROM tool_feedback WHERE entity_id = %(entity_id)s;

-- name: tool_learned_vectors
-- The learned examples of the tools whose counts moved since the worker last read them.
SELECT name, embedding FROM tool_examples
WHERE entity_id = %(entity_id)s AND source = 'feedback' AND name = ANY(%(names)s);

-- name: tool_example_hashes
-- Definition examples already embedded with the model registering: one of another model is embedded again.
SELECT name, text_hash FROM tool_examples
WHERE entity_id = %(entity_id)s AND source = 'definition' AND model_id = %(model_id)s;

-- name: tool_example_insert
INSERT INTO tool_examples (entity_id, name, text_hash, text, source, model_id, embedding)
VALUES (%(entity_id)s, %(name)s, %(text_hash)s, %(text)s, %(source)s, %(model_id)s, %(embedding)s)
ON CONFLICT (entity_id, name, text_hash) DO UPDATE
SET created_at = now(), model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding;

-- name: tool_example_drop_stale
-- Definition examples no longer listed by the tool's latest definition.
DELETE FROM tool_examples
WHERE entity_id = %(entity_id)s AND name = %(name)s AND source = 'definition' AND NOT (text_hash = ANY(%(keep)s));

-- name: tool_example_prune
-- Learned examples are bounded per tool: the newest %(keep)s stay.
DELETE FROM tool_examples e
WHERE e.entity_id = %(entity_id)s AND e.name = %(name)s AND e.source = 'feedback'
  AND e.text_hash NOT IN (SELECT text_hash FROM tool_examples
                          WHERE entity_id = %(entity_id)s AND name = %(name)s AND source = 'feedback'
                          ORDER BY created_at DESC LIMIT %(keep)s);

-- name: tool_feedback_add
INSERT INTO tool_feedback (entity_id, name, used, shown)
VALUES (%(entity_id)s, %(name)s, %(used)s, %(shown)s)
ON CONFLICT (entity_id, name) DO UPDATE SET used = tool_feedback.used + EXCLUDED.used,
                                            shown = tool_feedback.shown + EXCLUDED.shown, updated_at = now();

-- name: serving_model_share
-- Held to the commit of a catalogue write (catalog_cache.serving_guard); a model cutover's update
-- lock on the row (models.sql, lock_serving_model) waits for it, or it for the cutover.
SELECT model_id FROM embedding_model FOR SHARE;

-- name: catalog_bump
INSERT INTO catalog_versions (entity_id, kind, version) VALUES (%(entity_id)s, %(kind)s, 1)
ON CONFLICT (entity_id, kind) DO UPDATE SET version = catalog_versions.version + 1;

-- name: catalog_versions
SELECT entity_id, version FROM catalog_versions WHERE entity_id = ANY(%(entity_ids)s) AND kind = %(kind)s;

-- name: catalog_versions_of
-- Several kinds in one round trip (a catalogue's structure and its learned layer).
SELECT entity_id, kind, version FROM catalog_versions
WHERE entity_id = ANY(%(entity_ids)s) AND kind = ANY(%(kinds)s);

-- name: index_hashes
SELECT name, content_hash FROM index_descriptors WHERE entity_id = %(entity_id)s;

-- name: index_count_others
-- The entity's indices and collections a registration does not name; a described collection counts
-- before ingestion or its refresh has written its descriptor.
SELECT count(*) AS n FROM (SELECT name FROM index_descriptors WHERE entity_id = %(entity_id)s
                           UNION SELECT name FROM collections WHERE entity_id = %(entity_id)s) AS named
WHERE NOT (name = ANY(%(names)s));

-- name: index_upsert
INSERT INTO index_descriptors (entity_id, name, kind, description, fields, profile, content_hash, model_id, embedding,
                               field_vectors)
VALUES (%(entity_id)s, %(name)s, %(kind)s, %(description)s, %(fields)s, %(profile)s, %(content_hash)s,
        %(model_id)s, %(embedding)s, %(field_vectors)s)
ON CONFLICT (entity_id, name) DO UPDATE SET
    kind = EXCLUDED.kind, description = EXCLUDED.description, fields = EXCLUDED.fields, profile = EXCLUDED.profile,
    content_hash = EXCLUDED.content_hash, model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding,
    field_vectors = EXCLUDED.field_vectors, updated_at = now();

-- name: index_parts_drop
DELETE FROM index_parts WHERE entity_id = %(entity_id)s AND index_name = %(name)s;

-- name: index_part_insert
INSERT INTO index_parts (entity_id, index_name, part, fields, model_id, embedding)
VALUES (%(entity_id)s, %(name)s, %(part)s, %(fields)s, %(model_id)s, %(embedding)s);

-- name: index_part_catalog
SELECT index_name, part, fields, embedding FROM index_parts WHERE entity_id = %(entity_id)s
ORDER BY index_name, part;

-- name: index_list
SELECT name, kind, description, fields, profile, model_id, created_at, updated_at
FROM index_descriptors WHERE entity_id = %(entity_id)s ORDER BY name;

-- name: index_delete
-- Collections come and go with their documents (shared/selection/collections.py), not through this route.
DELETE FROM index_descriptors WHERE entity_id = %(entity_id)s AND name = ANY(%(names)s) AND kind = 'external'
RETURNING name;

-- name: index_catalog
SELECT name, kind, description, fields, profile, model_id, embedding, field_vectors
FROM index_descriptors WHERE entity_id = %(entity_id)s ORDER BY name;
