-- The upsert commits of concurrent ingestion runs, grouped in one transaction (shared/ingest/grouped.py).

-- name: lock_documents
-- Every document of the group, locked in one statement and in one order (entity, id): two
-- processes committing overlapping groups wait for each other instead of deadlocking.
SELECT d.entity_id, d.id AS document_id, d.version, d.generation::text AS generation, d.ready_version,
       d.content_hash
FROM documents d
JOIN unnest(%(entity_ids)s::text[], %(document_ids)s::text[]) AS g (entity_id, document_id)
  ON d.entity_id = g.entity_id AND d.id = g.document_id
ORDER BY d.entity_id, d.id
FOR UPDATE OF d;

-- name: create_chunk_stage
-- The new chunks of a group arrive by one binary COPY into this session's staging table, then
-- reach `chunks` in ONE insert: one statement-level term-statistics trigger for the whole group
-- (migration 0003) instead of one per document. Emptied at every commit.
CREATE TEMP TABLE IF NOT EXISTS chunk_stage (
    entity_id text, id uuid, document_id text, version integer, position integer, start_char integer,
    end_char integer, content text, content_hash text, token_count integer, model_id text, embedding vector,
    language text, text_config text, segmented text, enrichment text, copy_fingerprint text, copy_simhash bytea,
    context_tokens integer
) ON COMMIT DELETE ROWS;

-- name: copy_chunk_stage
COPY chunk_stage (entity_id, id, document_id, version, position, start_char, end_char, content, content_hash,
                  token_count, model_id, embedding, language, text_config, segmented, enrichment, copy_fingerprint,
                  copy_simhash, context_tokens)
FROM STDIN (FORMAT BINARY);

-- name: insert_staged_chunks
-- The one statement that writes new chunks (one document's, or a group's: every staged row at once).
-- Ids of new chunks are derived from (document, generation, version, position), so a rerun of a
-- version writes the same rows again instead of adding some. The text-search configuration falls
-- back to `simple` where this Postgres lacks the one named (shared/language.py names those
-- PostgreSQL 18 ships).
INSERT INTO chunks (entity_id, id, document_id, version, position, start_char, end_char, content,
                    content_hash, token_count, model_id, embedding, language, text_config, segmented, enrichment,
                    copy_fingerprint, copy_simhash, context_tokens)
SELECT s.entity_id, s.id, s.document_id, s.version, s.position, s.start_char, s.end_char, s.content,
       s.content_hash, s.token_count, s.model_id, s.embedding, s.language,
       coalesce(c.oid::regconfig, 'simple'::regconfig), s.segmented, s.enrichment, s.copy_fingerprint,
       s.copy_simhash, s.context_tokens
FROM chunk_stage s
LEFT JOIN pg_ts_config c ON c.cfgname = s.text_config AND c.cfgnamespace = 'pg_catalog'::regnamespace
ON CONFLICT (entity_id, id) DO UPDATE
SET version = EXCLUDED.version, position = EXCLUDED.position, start_char = EXCLUDED.start_char,
    end_char = EXCLUDED.end_char, content = EXCLUDED.content, content_hash = EXCLUDED.content_hash,
    token_count = EXCLUDED.token_count, model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding,
    language = EXCLUDED.language, text_config = EXCLUDED.text_config, segmented = EXCLUDED.segmented,
    enrichment = EXCLUDED.enrichment, copy_fingerprint = EXCLUDED.copy_fingerprint,
    copy_simhash = EXCLUDED.copy_simhash, context_tokens = EXCLUDED.context_tokens;

-- name: serving_model_share
-- Held to the commit: a model cutover (models.sql, lock_serving_model) waits for it, or it for the
-- cutover, which it then sees; chunk vectors are only ever written of the model serving their entity.
SELECT model_id FROM embedding_model FOR SHARE;

-- name: entity_models_of
-- Read after serving_model_share (its own snapshot, so an entity's cutover it waited for is seen).
SELECT entity_id, model_id FROM entity_models WHERE entity_id = ANY(%(entity_ids)s::text[]);
