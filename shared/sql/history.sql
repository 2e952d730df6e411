-- Document history (shared/history/, migration 0025): versions, archived chunks, retention,
-- changes between versions and search as of a time.

-- name: archive_dropped
-- The chunks the new version drops, kept in the archive while the entity keeps history; the same
-- transaction then deletes them from `chunks` (ingest.sql: delete_other_chunks).
INSERT INTO chunk_archive (entity_id, document_id, id, content, content_hash, token_count, model_id,
                           embedding, text_config, segmented, tsv)
SELECT c.entity_id, c.document_id, c.id, c.content, c.content_hash, c.token_count, c.model_id,
       c.embedding, c.text_config, c.segmented, c.tsv
FROM chunks c
WHERE c.entity_id = %(entity_id)s AND c.document_id = %(document_id)s AND NOT (c.id = ANY(%(keep)s::uuid[]))
  AND (SELECT coalesce(e.history_versions, %(versions)s) FROM entities e WHERE e.id = %(entity_id)s) > 0
ON CONFLICT (entity_id, id) DO NOTHING;

-- name: record_version
-- The new live version (its chunks as `chunks` now holds them: call after the upsert's inserts,
-- moves and deletes), and the end of the one it replaces. A rerun of a committed version closes
-- nothing and adds nothing.
WITH closed AS (
    UPDATE document_versions SET live_to = now()
    WHERE entity_id = %(entity_id)s AND document_id = %(document_id)s AND live_to IS NULL
      AND version <> %(version)s
)
INSERT INTO document_versions (entity_id, document_id, version, live_from, chunk_ids, starts, ends)
SELECT %(entity_id)s, %(document_id)s, %(version)s, now(),
       coalesce(array_agg(c.id ORDER BY c.position), '{}'),
       coalesce(array_agg(c.start_char ORDER BY c.position), '{}'),
       coalesce(array_agg(c.end_char ORDER BY c.position), '{}')
FROM chunks c
WHERE c.entity_id = %(entity_id)s AND c.document_id = %(document_id)s
ON CONFLICT (entity_id, document_id, version) DO NOTHING;

-- name: prune_versions
-- Replaced versions beyond the entity's retention: more than `versions` back, or replaced more than
-- `days` ago (0 days: no age bound). The live version always stays. One document, or (NULL) all of
-- the entity's.
WITH settings AS (
    SELECT coalesce(e.history_versions, %(versions)s) AS versions, coalesce(e.history_days, %(days)s) AS days
    FROM entities e WHERE e.id = %(entity_id)s
), ranked AS (
    SELECT v.document_id, v.version, v.live_to,
           row_number() OVER (PARTITION BY v.document_id ORDER BY v.version DESC) - 1 AS back
    FROM document_versions v
    WHERE v.entity_id = %(entity_id)s AND v.live_to IS NOT NULL
      AND (%(document_id)s::text IS NULL OR v.document_id = %(document_id)s::text)
), pruned AS (
    DELETE FROM document_versions v
    USING ranked r, settings s
    WHERE v.entity_id = %(entity_id)s AND v.document_id = r.document_id AND v.version = r.version
      AND (r.back >= s.versions OR (s.days > 0 AND r.live_to < now() - make_interval(days => s.days)))
    RETURNING v.document_id, v.version
)
UPDATE documents d SET history_pruned_to = greatest(d.history_pruned_to, p.version)
FROM (SELECT document_id, max(version) AS version FROM pruned GROUP BY document_id) p
WHERE d.entity_id = %(entity_id)s AND d.id = p.document_id;

-- name: prune_archive
-- Archived chunks no retained version names any more.
DELETE FROM chunk_archive a
WHERE a.entity_id = %(entity_id)s
  AND (%(document_id)s::text IS NULL OR a.document_id = %(document_id)s::text)
  AND NOT EXISTS (SELECT 1 FROM document_versions v
                  WHERE v.entity_id = a.entity_id AND v.document_id = a.document_id AND a.id = ANY(v.chunk_ids));

-- name: entities_with_history
SELECT DISTINCT entity_id FROM document_versions WHERE live_to IS NOT NULL;

-- name: retention
SELECT e.id, e.history_versions, e.history_days FROM entities e WHERE e.id = %(entity_id)s;

-- name: set_retention
UPDATE entities SET history_versions = %(versions)s, history_days = %(days)s
WHERE id = %(entity_id)s
RETURNING id;

-- name: document
SELECT d.ready_version, d.history_pruned_to, d.created_at FROM documents d
WHERE d.entity_id = %(entity_id)s AND d.id = %(document_id)s;

-- name: versions
SELECT v.version, v.live_from, v.live_to, cardinality(v.chunk_ids) AS chunk_count
FROM document_versions v
WHERE v.entity_id = %(entity_id)s AND v.document_id = %(document_id)s
ORDER BY v.version;

-- name: version_at
-- The version live at a time: the one whose commit came at or before it and was not yet replaced.
SELECT v.version FROM document_versions v
WHERE v.entity_id = %(entity_id)s AND v.document_id = %(document_id)s
  AND v.live_from <= %(at)s::timestamptz AND (v.live_to IS NULL OR v.live_to > %(at)s::timestamptz);

-- name: first_version
SELECT v.version, v.live_from FROM document_versions v
WHERE v.entity_id = %(entity_id)s AND v.document_id = %(document_id)s
ORDER BY v.version LIMIT 1;

-- name: version_chunks
-- A version's chunks in position order, from `chunks` (still live) or the archive.
SELECT (u.position - 1)::int AS position, u.id::text AS chunk_id, v.starts[u.position] AS start_char,
       v.ends[u.position] AS end_char,
       coalesce(c.content, a.content) AS content, coalesce(c.content_hash, a.content_hash) AS content_hash,
       coalesce(c.token_count, a.token_count) AS token_count
FROM document_versions v
CROSS JOIN LATERAL unnest(v.chunk_ids) WITH ORDINALITY AS u (id, position)
LEFT JOIN chunks c ON c.entity_id = %(entity_id)s AND c.id = u.id
LEFT JOIN chunk_archive a ON a.entity_id = %(entity_id)s AND a.id = u.id
WHERE v.entity_id = %(entity_id)s AND v.document_id = %(document_id)s AND v.version = %(version)s
ORDER BY u.position;

-- name: search_as_of
-- A search over the chunks every document in scope had at a time: per document the version live
-- then, its chunks from `chunks` or the archive. Ranked with exact distances and ts_rank_cd (no
-- HNSW walk, no BM25 statistics: those describe the live index), fused as the request's blend.
WITH versions AS (
    SELECT v.entity_id, v.document_id, v.version, v.chunk_ids, v.starts, v.ends, d.title, d.source, d.tags,
           d.summary
    FROM document_versions v
    JOIN documents d ON d.entity_id = v.entity_id AND d.id = v.document_id
    WHERE v.entity_id = ANY(%(entity_ids)s::text[])
      AND v.live_from <= %(as_of)s::timestamptz AND (v.live_to IS NULL OR v.live_to > %(as_of)s::timestamptz)
      AND (%(document_ids)s::text[] IS NULL OR v.document_id = ANY(%(document_ids)s::text[]))
      AND (%(exclude_document_ids)s::text[] IS NULL OR v.document_id <> ALL(%(exclude_document_ids)s::text[]))
      AND (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(tags)s::text[] IS NULL OR d.tags && %(tags)s::text[])
      AND (%(collections)s::text[] IS NULL OR d.collection = ANY(%(collections)s::text[]))
      AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
      AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
      AND (%(updated_after)s::timestamptz IS NULL OR v.live_from >= %(updated_after)s::timestamptz)
      AND (%(updated_before)s::timestamptz IS NULL OR v.live_from < %(updated_before)s::timestamptz)
), configs AS (
    SELECT g.config, websearch_to_tsquery(g.config, %(terms)s) AS query
    FROM (SELECT oid::regconfig AS config FROM pg_ts_config) g
), chunks_then AS (
    SELECT s.entity_id, s.document_id, s.version, (u.position - 1)::int AS position, u.id AS chunk_id,
           s.starts[u.position] AS start_char, s.ends[u.position] AS end_char, s.title, s.source, s.tags, s.summary,
           coalesce(c.content, a.content) AS content, coalesce(c.embedding, a.embedding) AS embedding,
           coalesce(c.model_id, a.model_id) AS model_id,
           coalesce(c.tsv, a.tsv) AS tsv, q.query
    FROM versions s
    CROSS JOIN LATERAL unnest(s.chunk_ids) WITH ORDINALITY AS u (id, position)
    LEFT JOIN chunks c ON c.entity_id = s.entity_id AND c.id = u.id
    LEFT JOIN chunk_archive a ON a.entity_id = s.entity_id AND a.id = u.id
    -- the query parsed once per text-search configuration, as the chunk was indexed
    JOIN configs q ON q.config = coalesce(c.text_config, a.text_config)
    WHERE (%(exclude_chunk_ids)s::uuid[] IS NULL OR u.id <> ALL(%(exclude_chunk_ids)s::uuid[]))
), scored AS (
    SELECT t.*, ts_rank_cd(t.tsv, t.query, 32) AS text,
           -- a chunk archived before a model cutover has the old model's vector: not comparable
           CASE WHEN %(use_vector)s AND t.model_id = %(model_id)s THEN 1 - (t.embedding <=> %(embedding)s::vector)
                ELSE 0 END AS vector
    FROM chunks_then t
    WHERE %(use_vector)s OR t.tsv @@ t.query
)
SELECT entity_id, document_id, version, position, chunk_id, start_char, end_char, title, source, tags, summary, content,
       text, vector, (1 - %(alpha)s) * text + %(alpha)s * vector AS score
FROM scored
WHERE NOT %(use_vector)s OR vector >= %(vector_threshold)s
ORDER BY score DESC, document_id, position
LIMIT %(k)s;
