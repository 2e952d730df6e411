-- Bulk loading and plan inspection for benchmarks and tests (shared/evaluation/loader.py,
-- shared/evaluation/explain.py): never on a request path.

-- name: loader_ensure_entity
INSERT INTO entities (id, kind, name) VALUES (%(id)s, %(kind)s, %(id)s)
ON CONFLICT (id) DO NOTHING;

-- name: loader_delete_document_chunks
DELETE FROM chunks WHERE entity_id = %(entity)s AND document_id = %(id)s;

-- name: loader_upsert_document
INSERT INTO documents (entity_id, id, version, ready_version, title, source, content_type, tags, object_key,
                       size_bytes, status, summary, chunk_count, chunks_embedded, created_at, updated_at)
VALUES (%(entity)s, %(id)s, %(version)s, %(version)s, %(title)s, %(source)s, 'text/plain', %(tags)s,
        %(object_key)s, %(size)s, 'ready', %(summary)s, %(chunks)s, %(chunks)s,
        coalesce(%(created_at)s::timestamptz, now()), coalesce(%(updated_at)s::timestamptz, now()))
ON CONFLICT (entity_id, id) DO UPDATE
SET version = EXCLUDED.version, ready_version = EXCLUDED.ready_version, title = EXCLUDED.title,
    source = EXCLUDED.source, tags = EXCLUDED.tags, summary = EXCLUDED.summary,
    chunk_count = EXCLUDED.chunk_count, chunks_embedded = EXCLUDED.chunks_embedded, status = 'ready',
    size_bytes = EXCLUDED.size_bytes, object_key = EXCLUDED.object_key,
    updated_at = coalesce(%(updated_at)s::timestamptz, now());

-- name: loader_copy_chunks
COPY chunks (entity_id, document_id, version, position, start_char, end_char, content, content_hash,
             token_count, model_id, embedding, copy_fingerprint, copy_simhash, context_tokens)
FROM STDIN WITH (FORMAT BINARY);

-- name: loader_chunk_ids
SELECT document_id, id FROM chunks
WHERE entity_id = %(entity)s AND document_id = ANY(%(ids)s)
ORDER BY document_id, position;

-- name: explain_indexes
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema()
  AND (tablename LIKE 'chunks%%' OR tablename LIKE 'term_stats%%' OR tablename = 'documents');

-- name: explain_drop_hnsw
-- Bulk loads into a fresh database: building HNSW once after COPY is several times
-- faster than inserting into it row by row. Same definition as 0021_chunks_halfvec_hnsw.sql
-- ({{dimension}}: the stored model's, written in by explain.rebuild_hnsw).
DROP INDEX IF EXISTS chunks_embedding_half_idx;

-- name: explain_create_hnsw
CREATE INDEX IF NOT EXISTS chunks_embedding_half_idx ON ONLY chunks
USING hnsw ((embedding::halfvec({{dimension}})) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64);
DO $$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'chunks'::regclass ORDER BY c.relname LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw ((embedding::halfvec({{dimension}})) '
                       'halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)', part || '_embedding_half_idx', part);
        EXECUTE format('ALTER INDEX chunks_embedding_half_idx ATTACH PARTITION %I', part || '_embedding_half_idx');
    END LOOP;
END $$;

-- name: history_bytes
-- What an entity's history occupies next to its live chunks (row bytes, indexes left out):
-- scripts/history_overhead.py.
SELECT (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM chunks c WHERE c.entity_id = %(entity)s) AS live,
       (SELECT coalesce(sum(pg_column_size(v.*)), 0) FROM document_versions v
         WHERE v.entity_id = %(entity)s AND v.live_to IS NULL) AS live_versions,
       (SELECT coalesce(sum(pg_column_size(v.*)), 0) FROM document_versions v
         WHERE v.entity_id = %(entity)s AND v.live_to IS NOT NULL) AS replaced_versions,
       (SELECT coalesce(sum(pg_column_size(a.*)), 0) FROM chunk_archive a WHERE a.entity_id = %(entity)s) AS archive,
       (SELECT count(*) FROM document_versions v WHERE v.entity_id = %(entity)s AND v.live_to IS NOT NULL) AS retained,
       (SELECT count(*) FROM chunks c WHERE c.entity_id = %(entity)s) AS live_chunks;
