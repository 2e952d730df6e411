-- Collections: a tenant's documents grouped under a name, selectable as an index
-- (shared/selection/collections.py, infra/migrations/0008_collections.sql).

-- name: changes_due
-- Collections whose documents stopped changing `debounce` seconds ago, or that have waited
-- `max_wait` seconds since their first unprocessed change.
SELECT entity_id, name, changed_at
FROM collection_changes
WHERE changed_at <= clock_timestamp() - make_interval(secs => %(debounce)s)
   OR first_changed_at <= clock_timestamp() - make_interval(secs => %(max_wait)s)
ORDER BY first_changed_at
LIMIT %(limit)s;

-- name: change_done
-- Only the change that was seen: one made during the recomputation stays due.
DELETE FROM collection_changes
WHERE entity_id = %(entity_id)s AND name = %(name)s AND changed_at = %(changed_at)s;

-- name: lock
-- One recomputation (or description change) of a collection at a time, until the transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('edgeindex.collection:' || %(entity_id)s || '/' || %(name)s, 0));

-- name: get
SELECT name, description, created_at, updated_at FROM collections
WHERE entity_id = %(entity_id)s AND name = %(name)s;

-- name: set_description
INSERT INTO collections AS c (entity_id, name, description) VALUES (%(entity_id)s, %(name)s, %(description)s)
ON CONFLICT (entity_id, name) DO UPDATE SET description = EXCLUDED.description, updated_at = now()
RETURNING name, description, created_at, updated_at;

-- name: drop
-- A collection with no document left and nothing said about it is gone.
DELETE FROM collections c
WHERE c.entity_id = %(entity_id)s AND c.name = %(name)s AND c.description = ''
  AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.entity_id = c.entity_id AND d.collection = c.name);

-- name: documents
-- What the profile is made of: the ready documents (the newest first, bounded).
SELECT d.id, d.title, d.source, d.tags, d.summary, d.content_type, d.chunk_count
FROM documents d
WHERE d.entity_id = %(entity_id)s AND d.collection = %(collection)s AND d.ready_version IS NOT NULL
ORDER BY d.updated_at DESC, d.id
LIMIT %(max_documents)s;

-- name: counts
SELECT count(*) FILTER (WHERE ready_version IS NOT NULL) AS ready, count(*) AS total
FROM documents WHERE entity_id = %(entity_id)s AND collection = %(collection)s;

-- name: distinctive_terms
-- Terms frequent in the collection's chunks and rare in the entity's (the term statistics of
-- infra/migrations/0003 and 0006): share of the sampled chunks holding the term × its idf
-- among all the entity's chunks of that configuration. Each term comes back with a word of
-- the text it was made from (lexemes are stems: "schedul"), for people and the embedding.
WITH sample AS MATERIALIZED (
    SELECT c.id, c.text_config, c.tsv, c.content
    FROM chunks c JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
    WHERE c.entity_id = %(entity_id)s AND d.collection = %(collection)s AND d.ready_version IS NOT NULL
    LIMIT %(max_chunks)s
), local AS (
    SELECT s.text_config AS config, t.term, count(*) AS df, (SELECT count(*) FROM sample) AS n
    FROM sample s, unnest(tsvector_to_array(s.tsv)) AS t (term)
    WHERE length(t.term) BETWEEN 3 AND 40 AND t.term !~ '^[0-9._-]+$'
    GROUP BY s.text_config, t.term
), scored AS (
    SELECT l.config, l.term, l.df,
           (l.df::float8 / l.n) * ln(1 + (e.chunks - coalesce(g.df, l.df) + 0.5) / (coalesce(g.df, l.df) + 0.5)) AS weight
    FROM local l
    JOIN entity_stats e ON e.entity_id = %(entity_id)s AND e.config = l.config
    LEFT JOIN term_stats g ON g.entity_id = %(entity_id)s AND g.config = l.config AND g.term = l.term
    -- in a large collection a term of a single chunk says little about the collection
    WHERE l.df >= CASE WHEN l.n >= 50 THEN 2 ELSE 1 END
    ORDER BY weight DESC, l.term
    LIMIT %(max_terms)s
)
SELECT s.term, s.df, round(s.weight::numeric, 4)::float8 AS weight,
       coalesce((SELECT lower(m[1])
                 FROM sample x, regexp_match(x.content, '\m(' || regexp_replace(s.term, '([^[:alnum:]])', '\\\1', 'g')
                                                        || '[[:alnum:]]*)', 'i') AS m
                 WHERE x.text_config = s.config AND x.tsv @@ lexeme_query(s.term) AND m IS NOT NULL
                 LIMIT 1), s.term) AS word
FROM scored s
ORDER BY s.weight DESC, s.term;

-- name: json_fields
-- Field paths of the collection's JSON documents, as extraction wrote them (one "path: value"
-- line per leaf, shared/ingest/extract.py), array indices dropped: "[3].customer.email" is
-- "customer.email".
WITH lines AS (
    SELECT regexp_replace(regexp_replace(m[1], '\[[0-9]+\]', '', 'g'), '^\.', '') AS path
    FROM (SELECT c.content
          FROM chunks c JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
          WHERE c.entity_id = %(entity_id)s AND d.collection = %(collection)s AND d.ready_version IS NOT NULL
            AND d.content_type = 'application/json'
          LIMIT %(max_chunks)s) c,
         regexp_matches(c.content, '^([^\n:]{1,200}): ', 'gm') AS m
)
SELECT path, count(*) AS n FROM lines WHERE path <> ''
GROUP BY path ORDER BY n DESC, path LIMIT %(max_fields)s;

-- name: descriptor
SELECT name, kind, content_hash, fields, model_id, field_vectors, field_hash
FROM index_descriptors WHERE entity_id = %(entity_id)s AND name = %(name)s;

-- name: upsert_descriptor
-- A collection never takes the name of an external index registered before it (kind 'external').
-- `fields_embedded`: whether a field vector was embedded now (infra/migrations/0018).
INSERT INTO index_descriptors AS i (entity_id, name, kind, description, fields, profile, content_hash, model_id,
                                    embedding, field_vectors, field_hash, fields_embedded_at)
VALUES (%(entity_id)s, %(name)s, 'collection', %(description)s, %(fields)s, %(profile)s, %(content_hash)s,
        %(model_id)s, %(embedding)s, %(field_vectors)s, %(field_hash)s,
        CASE WHEN %(fields_embedded)s THEN now() END)
ON CONFLICT (entity_id, name) DO UPDATE SET
    description = EXCLUDED.description, fields = EXCLUDED.fields, profile = EXCLUDED.profile,
    content_hash = EXCLUDED.content_hash, model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding,
    field_vectors = EXCLUDED.field_vectors, field_hash = EXCLUDED.field_hash,
    fields_embedded_at = CASE WHEN %(fields_embedded)s THEN now() ELSE i.fields_embedded_at END,
    updated_at = now()
WHERE i.kind = 'collection';

-- name: delete_descriptor
DELETE FROM index_descriptors WHERE entity_id = %(entity_id)s AND name = %(name)s AND kind = 'collection';

-- name: list
-- Every collection of an entity with its descriptor (NULL until first computed) and document counts.
SELECT c.name, c.description, c.created_at, c.updated_at,
       i.profile, i.fields, i.model_id, i.updated_at AS profile_updated_at,
       (SELECT count(*) FROM documents d WHERE d.entity_id = c.entity_id AND d.collection = c.name) AS documents,
       (SELECT count(*) FROM documents d WHERE d.entity_id = c.entity_id AND d.collection = c.name
                                           AND d.ready_version IS NOT NULL) AS ready_documents,
       EXISTS (SELECT 1 FROM collection_changes x WHERE x.entity_id = c.entity_id AND x.name = c.name) AS pending
FROM collections c
LEFT JOIN index_descriptors i ON i.entity_id = c.entity_id AND i.name = c.name AND i.kind = 'collection'
WHERE c.entity_id = %(entity_id)s AND (%(name)s::text IS NULL OR c.name = %(name)s)
ORDER BY c.name;

-- name: names_taken
-- Which of these names are collections of the entity (an external descriptor cannot take one).
SELECT name FROM collections WHERE entity_id = %(entity_id)s AND name = ANY(%(names)s)
UNION
SELECT name FROM index_descriptors WHERE entity_id = %(entity_id)s AND name = ANY(%(names)s) AND kind = 'collection';
