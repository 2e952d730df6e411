-- Embedding models (shared/models/, migration 0026): the serving model, and the vectors a backfill
-- writes for another one beside it.

-- name: serving_model
SELECT model_id, dimension FROM embedding_model;

-- name: start_backfill
-- A model has one dimension: a restart with another is refused (the caller reads `dimension` back).
INSERT INTO model_backfills (model_id, dimension, entity_ids, state)
VALUES (%(model_id)s, %(dimension)s, %(entity_ids)s, 'running')
ON CONFLICT (model_id) DO UPDATE
   SET entity_ids = EXCLUDED.entity_ids, state = 'running', updated_at = now(), finished_at = NULL
 WHERE model_backfills.dimension = EXCLUDED.dimension
RETURNING dimension;

-- name: pending_chunks
-- The next chunks after the cursor (entity, id) with no vector of the model for their current text
-- (a chunk the model serves has its vector in `chunks`): a backfill that was stopped or killed starts
-- again from the first and skips what it finished, one index probe each.
SELECT c.entity_id, c.id, c.content, c.content_hash
FROM chunks c
WHERE (c.entity_id, c.id) > (%(after_entity)s, %(after_id)s::uuid)
  AND (%(entity_ids)s::text[] IS NULL OR c.entity_id = ANY(%(entity_ids)s::text[]))
  AND c.model_id <> %(model_id)s
  AND NOT EXISTS (SELECT 1 FROM chunk_vectors v
                  WHERE v.model_id = %(model_id)s AND v.entity_id = c.entity_id AND v.chunk_id = c.id
                    AND v.content_hash = c.content_hash)
ORDER BY c.entity_id, c.id
LIMIT %(limit)s;

-- name: insert_vector
-- A chunk deleted or rewritten since it was read is skipped (the vector is of a text it no longer has).
INSERT INTO chunk_vectors (model_id, entity_id, chunk_id, content_hash, dimension, embedding)
SELECT %(model_id)s, c.entity_id, c.id, c.content_hash, %(dimension)s, %(embedding)s
FROM chunks c
WHERE c.entity_id = %(entity_id)s AND c.id = %(chunk_id)s AND c.content_hash = %(content_hash)s
ON CONFLICT (model_id, entity_id, chunk_id) DO UPDATE
   SET content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding, created_at = now();

-- name: record_progress
UPDATE model_backfills
   SET embedded = embedded + %(embedded)s, seconds = seconds + %(seconds)s, updated_at = now()
 WHERE model_id = %(model_id)s;

-- name: finish_backfill
UPDATE model_backfills
   SET state = %(state)s, updated_at = now(),
       finished_at = CASE WHEN %(state)s = 'done' THEN now() END
 WHERE model_id = %(model_id)s;

-- name: model_status
-- Each model with vectors or a backfill: how many of the chunks in its scope have a vector (stored
-- beside them, or theirs: the chunks of entities it serves).
SELECT b.model_id, b.dimension, b.entity_ids, b.state, b.embedded, b.seconds, b.started_at, b.updated_at,
       b.finished_at,
       (SELECT count(*) FROM chunks c
         WHERE b.entity_ids IS NULL OR c.entity_id = ANY(b.entity_ids)) AS chunks,
       (SELECT count(*) FROM chunk_vectors v JOIN chunks c ON c.entity_id = v.entity_id AND c.id = v.chunk_id
         WHERE v.model_id = b.model_id AND v.content_hash = c.content_hash
           AND (b.entity_ids IS NULL OR v.entity_id = ANY(b.entity_ids)))
       + (SELECT count(*) FROM chunks c
           WHERE c.model_id = b.model_id AND (b.entity_ids IS NULL OR c.entity_id = ANY(b.entity_ids))) AS vectors
FROM model_backfills b
ORDER BY b.started_at;

-- name: drop_vectors
DELETE FROM chunk_vectors WHERE model_id = %(model_id)s;

-- name: drop_entity_vectors
DELETE FROM chunk_vectors WHERE model_id = %(model_id)s AND entity_id = ANY(%(entity_ids)s::text[]);

-- name: drop_backfill
DELETE FROM model_backfills WHERE model_id = %(model_id)s;

-- name: lock_serving_model
-- A cutover holds the row to its commit: another cutover waits, and so does an ingest write
-- (ingest_grouped.sql reads it FOR SHARE), which then sees the new model.
SELECT model_id, dimension FROM embedding_model FOR UPDATE;

-- name: lock_chunks
-- Writes to chunks wait for the cutover's commit; searches read on (the old vectors, then the new).
LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE;

-- name: keep_serving_vectors
-- The vectors a cutover replaces, kept under their model for a rollback: of the chunks in its scope
-- (NULL: every entity) that another model than the target serves.
INSERT INTO chunk_vectors (model_id, entity_id, chunk_id, content_hash, dimension, embedding)
SELECT c.model_id, c.entity_id, c.id, c.content_hash, %(dimension)s, c.embedding
FROM chunks c
WHERE c.model_id <> %(target)s
  AND (%(entity_ids)s::text[] IS NULL OR c.entity_id = ANY(%(entity_ids)s::text[]))
ON CONFLICT (model_id, entity_id, chunk_id) DO UPDATE
   SET content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding, created_at = now();

-- name: serve_vectors
-- Each chunk's vector becomes the target model's (a vector of its current text: pending_chunks
-- left none without one).
UPDATE chunks c
   SET embedding = v.embedding, model_id = v.model_id
  FROM chunk_vectors v
 WHERE v.model_id = %(target)s AND v.entity_id = c.entity_id AND v.chunk_id = c.id
   AND v.content_hash = c.content_hash AND c.model_id <> %(target)s
   AND (%(entity_ids)s::text[] IS NULL OR c.entity_id = ANY(%(entity_ids)s::text[]));

-- name: unserved_chunks
-- The chunks in a cutover's scope that the target model does not serve yet (none once it swapped).
SELECT count(*) AS n FROM chunks c
WHERE c.model_id <> %(target)s
  AND (%(entity_ids)s::text[] IS NULL OR c.entity_id = ANY(%(entity_ids)s::text[]));

-- name: entity_models
SELECT entity_id, model_id FROM entity_models ORDER BY entity_id;

-- name: serve_entities
INSERT INTO entity_models (entity_id, model_id, dimension)
SELECT unnest(%(entity_ids)s::text[]), %(target)s, %(dimension)s
ON CONFLICT (entity_id) DO UPDATE SET model_id = EXCLUDED.model_id, dimension = EXCLUDED.dimension, since = now();

-- name: unserve_entities
-- Entities back on the deployment's model (NULL: every entity, after a deployment-wide cutover).
DELETE FROM entity_models WHERE %(entity_ids)s::text[] IS NULL OR entity_id = ANY(%(entity_ids)s::text[]);

-- name: set_serving_model
UPDATE embedding_model SET model_id = %(target)s, dimension = %(dimension)s;

-- name: kept_backfill
-- The replaced model's vectors are a complete backfill of every entity now (rollback, status, drop).
INSERT INTO model_backfills (model_id, dimension, entity_ids, state, finished_at)
VALUES (%(model_id)s, %(dimension)s, NULL, 'done', now())
ON CONFLICT (model_id) DO UPDATE
   SET entity_ids = NULL, state = 'done', updated_at = now(), finished_at = now();

-- name: record_cutover
INSERT INTO model_cutovers (from_model, to_model, dimension, chunks, embedded, rollback, entity_ids)
VALUES (%(from_model)s, %(to_model)s, %(dimension)s, %(chunks)s, %(embedded)s, %(rollback)s, %(entity_ids)s)
RETURNING id, at;

-- name: last_cutover
-- The last change of the deployment's model (a rollback undoes it; entities' cutovers are not it).
SELECT id, from_model, to_model, dimension, chunks, embedded, rollback, at
FROM model_cutovers WHERE entity_ids IS NULL ORDER BY id DESC LIMIT 1;

-- name: cutovers
SELECT id, from_model, to_model, dimension, chunks, embedded, rollback, entity_ids, at
FROM model_cutovers ORDER BY id;

-- name: shadow_search
-- The shadow model's answer: an exact search over its vectors of the entities' chunks (of their
-- current text), off the request path.
SELECT v.chunk_id::text AS chunk_id
FROM chunk_vectors v
JOIN chunks c ON c.entity_id = v.entity_id AND c.id = v.chunk_id AND c.content_hash = v.content_hash
WHERE v.model_id = %(model_id)s AND v.entity_id = ANY(%(entity_ids)s::text[])
ORDER BY v.embedding <=> %(embedding)s::vector
LIMIT %(k)s;

-- name: log_shadow
INSERT INTO model_shadow_searches (search_id, entity_ids, query, serving_model, shadow_model, k, served, shadow,
                                   overlap, shadow_ms)
VALUES (%(search_id)s, %(entity_ids)s, %(query)s, %(serving_model)s, %(shadow_model)s, %(k)s, %(served)s,
        %(shadow)s, %(overlap)s, %(shadow_ms)s);

-- name: shadow_summary
-- Per shadow model and the model it shadowed: how many searches, and how alike the answers were.
SELECT shadow_model, serving_model, count(*) AS searches, avg(overlap)::float8 AS overlap,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY shadow_ms))::float8 AS shadow_ms_p50, max(at) AS last_at
FROM model_shadow_searches
GROUP BY shadow_model, serving_model
ORDER BY shadow_model, serving_model;

-- name: drop_shadow
DELETE FROM model_shadow_searches WHERE shadow_model = %(model_id)s;

-- name: catalogue_tools
-- A catalogue's rows whose vectors are of another model than %(model_id)s (a cutover re-embeds
-- them, models/catalogues.py); the hash read is the guard of the update that follows.
SELECT entity_id, name, description, parameters, category, tags, requires, examples, content_hash
FROM tools WHERE model_id <> %(model_id)s ORDER BY entity_id, name;

-- name: catalogue_examples
SELECT entity_id, name, text_hash, text FROM tool_examples WHERE model_id <> %(model_id)s
ORDER BY entity_id, name, text_hash;

-- name: catalogue_indices
SELECT entity_id, name, kind, description, fields, profile, content_hash
FROM index_descriptors WHERE model_id <> %(model_id)s ORDER BY entity_id, name;

-- name: catalogue_parts
SELECT entity_id, index_name, part, fields FROM index_parts WHERE model_id <> %(model_id)s
ORDER BY entity_id, index_name, part;

-- name: reembed_tool
UPDATE tools SET model_id = %(model_id)s, embedding = %(embedding)s,
                 description_embedding = %(description_embedding)s, content_hash = %(new_hash)s
WHERE entity_id = %(entity_id)s AND name = %(name)s AND content_hash = %(content_hash)s;

-- name: reembed_example
UPDATE tool_examples SET model_id = %(model_id)s, embedding = %(embedding)s
WHERE entity_id = %(entity_id)s AND name = %(name)s AND text_hash = %(text_hash)s;

-- name: reembed_index
UPDATE index_descriptors SET model_id = %(model_id)s, embedding = %(embedding)s,
                             field_vectors = %(field_vectors)s, field_hash = %(field_hash)s,
                             content_hash = %(new_hash)s
WHERE entity_id = %(entity_id)s AND name = %(name)s AND content_hash = %(content_hash)s;

-- name: reembed_part
UPDATE index_parts SET model_id = %(model_id)s, embedding = %(embedding)s
WHERE entity_id = %(entity_id)s AND index_name = %(index_name)s AND part = %(part)s AND fields = %(fields)s;

-- name: queue_job
-- Refused (no row) while another job is queued or running: model_jobs_one_active.
INSERT INTO model_jobs (action, model_id, duty, entity_ids)
VALUES (%(action)s, %(model_id)s, %(duty)s, %(entity_ids)s)
ON CONFLICT DO NOTHING
RETURNING id, action, model_id, entity_ids, duty, state, stop_requested, attempts, result, error, created_at, started_at,
          finished_at;

-- name: claim_job
-- The queued job, or a running one whose runner's lease ran out; the lease is renewed per batch.
UPDATE model_jobs
   SET state = 'running', attempts = attempts + 1, lease_until = now() + make_interval(secs => %(lease)s),
       started_at = coalesce(started_at, now())
 WHERE id = (SELECT id FROM model_jobs
              WHERE state = 'queued' OR (state = 'running' AND lease_until < now())
              ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, action, model_id, entity_ids, duty, attempts, stop_requested;

-- name: renew_job
-- Between batches: the lease renewed; whether a stop was asked for.
UPDATE model_jobs SET lease_until = now() + make_interval(secs => %(lease)s)
 WHERE id = %(id)s
RETURNING stop_requested;

-- name: finish_job
UPDATE model_jobs
   SET state = %(state)s, result = %(result)s, error = %(error)s, lease_until = NULL, finished_at = now()
 WHERE id = %(id)s;

-- name: stop_job
-- A queued job stops at once; a running backfill after its batch in hand (renew_job tells its runner).
UPDATE model_jobs
   SET stop_requested = true,
       state = CASE WHEN state = 'queued' THEN 'stopped' ELSE state END,
       finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END
 WHERE id = %(id)s
RETURNING id, action, model_id, entity_ids, duty, state, stop_requested, attempts, result, error, created_at, started_at,
          finished_at;

-- name: recent_jobs
SELECT id, action, model_id, entity_ids, duty, state, stop_requested, attempts, result, error, created_at, started_at,
       finished_at
FROM model_jobs ORDER BY id DESC LIMIT %(limit)s;

-- name: feedback_judgements
-- Searches with feedback naming a useful chunk, latest first: the query, its entities and the useful
-- chunks that still exist (models/compare.py).
SELECT t.query, t.entity_ids,
       ARRAY(SELECT c.id::text FROM chunks c
              WHERE c.entity_id = ANY(t.entity_ids) AND c.id = ANY(f.useful::uuid[])) AS relevant
FROM router_feedback f JOIN search_telemetry t ON t.search_id = f.search_id
WHERE cardinality(f.useful) > 0
ORDER BY f.id DESC
LIMIT %(limit)s;

-- name: serving_dense_search
-- The serving model's exact ranking of the entities' chunks (`+ 0`: no HNSW walk, whose filter
-- after the walk may return fewer than k), for a comparison beside shadow_search's.
SELECT c.id::text AS chunk_id
FROM chunks c
WHERE c.entity_id = ANY(%(entity_ids)s::text[]) AND c.model_id = %(model_id)s
ORDER BY (c.embedding <=> %(embedding)s::vector) + 0
LIMIT %(k)s;

-- name: models_to_prepare
-- Models a cutover may soon serve: a backfill running or done of another model of the serving
-- dimension, but not the vectors the last cutover kept for a rollback (runtime/serving_model.py).
SELECT b.model_id
FROM model_backfills b
WHERE b.model_id <> %(serving)s AND b.dimension = %(dimension)s AND b.state IN ('running', 'done')
  AND b.model_id IS DISTINCT FROM (SELECT c.from_model FROM model_cutovers c WHERE c.entity_ids IS NULL
                                   ORDER BY c.id DESC LIMIT 1)
ORDER BY b.started_at DESC;

-- name: entities_models
-- Each named entity that exists, with the model its own row names (NULL: the deployment's).
SELECT e.id, m.model_id
FROM entities e LEFT JOIN entity_models m ON m.entity_id = e.id
WHERE e.id = ANY(%(entity_ids)s::text[]);
