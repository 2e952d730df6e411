-- Hybrid search: one statement, one round trip. shared/search/engine.py splices the
-- fragments (`candidate_filter`, `text_query`) into `search` once, at import time, so
-- the three retrievers cannot drift apart in what they let through.
--
-- Order of work: the entity set prunes partitions (entity_id = ANY(...) with a constant
-- array; plans are custom, see bindings/database.py), the chunk- and document-level
-- filters narrow candidates inside each index scan, then each retriever keeps its best
-- n: HNSW (cosine, iterative scan so filters still yield n), GIN tsvector, GIN
-- trigram. The union is scored on all three components, normalized, fused, optionally
-- deduplicated per document, and the top `limit` rows come back with document fields.

-- name: candidate_filter
c.entity_id = ANY(%(entity_ids)s::text[])
AND (%(document_ids)s::text[] IS NULL OR c.document_id = ANY(%(document_ids)s::text[]))
AND (%(exclude_document_ids)s::text[] IS NULL OR c.document_id <> ALL(%(exclude_document_ids)s::text[]))
AND (%(exclude_chunk_ids)s::uuid[] IS NULL OR c.id <> ALL(%(exclude_chunk_ids)s::uuid[]))
-- Ingestion commits a version's chunks in the same transaction that sets ready_version
-- (ingest/workflow.py, upsert), so every committed chunk is live: the documents table is
-- only consulted when a document-level filter is given (a constant false folds it away).
AND (NOT %(document_filters)s OR EXISTS (
    SELECT 1 FROM documents d
    WHERE d.entity_id = c.entity_id AND d.id = c.document_id
      AND c.version <= d.ready_version
      AND (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(tags)s::text[] IS NULL OR d.tags && %(tags)s::text[])
      AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
      AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
      AND (%(updated_after)s::timestamptz IS NULL OR d.updated_at >= %(updated_after)s::timestamptz)
      AND (%(updated_before)s::timestamptz IS NULL OR d.updated_at < %(updated_before)s::timestamptz)))

-- name: text_query
-- "any" mode ranks by the query's words OR-ed; "websearch" is websearch_to_tsquery.
(CASE WHEN %(websearch)s THEN websearch_to_tsquery('english', %(query)s)
      ELSE to_tsquery('english', %(any_terms)s) END)

-- name: text_query_all
-- The stricter query tried first: every word (or the websearch query itself).
(CASE WHEN %(websearch)s THEN websearch_to_tsquery('english', %(query)s)
      ELSE plainto_tsquery('english', %(query)s) END)

-- name: search
WITH docs AS MATERIALIZED (
    -- Documents in scope, at most one more than the exact-search bound: a cheap index scan
    -- that tells whether the candidate set is small enough to skip the HNSW index.
    SELECT d.entity_id, d.id, d.chunk_count
    FROM documents d
    WHERE d.entity_id = ANY(%(entity_ids)s::text[]) AND d.ready_version IS NOT NULL
      AND (%(document_ids)s::text[] IS NULL OR d.id = ANY(%(document_ids)s::text[]))
      AND (%(exclude_document_ids)s::text[] IS NULL OR d.id <> ALL(%(exclude_document_ids)s::text[]))
      AND (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(tags)s::text[] IS NULL OR d.tags && %(tags)s::text[])
      AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
      AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
      AND (%(updated_after)s::timestamptz IS NULL OR d.updated_at >= %(updated_after)s::timestamptz)
      AND (%(updated_before)s::timestamptz IS NULL OR d.updated_at < %(updated_before)s::timestamptz)
    LIMIT %(exact_max_docs)s + 1
), scope AS (
    SELECT count(*) > 0 AS nonempty,
           count(*) <= %(exact_max_docs)s AND coalesce(sum(chunk_count), 0) <= %(exact_max_chunks)s AS exact,
           count(*) <= %(exact_max_docs)s AND coalesce(sum(chunk_count), 0) <= %(trigram_scan_max_chunks)s AS tiny
    FROM docs
), vec AS MATERIALIZED (
    -- Few candidate chunks (a small tenant, or selective filters): exact distances over
    -- them. Otherwise HNSW, filtering inside the scan; filtered HNSW is at its worst
    -- exactly when the filters are selective, which is the case the exact branch takes.
    (SELECT c.entity_id, c.id
     FROM docs JOIN chunks c ON c.entity_id = docs.entity_id AND c.document_id = docs.id
     WHERE %(use_vector)s AND (SELECT exact FROM scope)
       AND c.entity_id = ANY(%(entity_ids)s::text[])
       AND (%(exclude_chunk_ids)s::uuid[] IS NULL OR c.id <> ALL(%(exclude_chunk_ids)s::uuid[]))
     ORDER BY c.embedding <=> %(embedding)s::vector
     LIMIT %(n)s)
    UNION ALL
    (SELECT c.entity_id, c.id
     FROM chunks c
     WHERE %(use_vector)s AND NOT (SELECT exact FROM scope) AND /*candidate_filter*/
     ORDER BY c.embedding <=> %(embedding)s::vector
     LIMIT %(n)s)
), fts_all AS MATERIALIZED (
    -- Full text in two stages, because ranking every chunk that shares one common word
    -- with the query does not scale: chunks holding all the words first (selective, via
    -- the GIN index) ...
    SELECT c.entity_id, c.id, ts_rank(c.tsv, /*text_query*/, %(rank_normalization)s) AS rank
    FROM chunks c
    WHERE %(use_text)s AND (SELECT nonempty FROM scope) AND c.tsv @@ /*text_query_all*/ AND /*candidate_filter*/
    ORDER BY rank DESC
    LIMIT %(n)s
), fts AS MATERIALIZED (
    -- ... then, only if those are fewer than k, chunks holding any word, ranking at most
    -- `text_max_matches` of them (arbitrary ones if more match).
    SELECT entity_id, id, max(rank) AS rank
    FROM (
        SELECT entity_id, id, rank FROM fts_all
        UNION ALL
        (SELECT m.entity_id, m.id, ts_rank(m.tsv, /*text_query*/, %(rank_normalization)s) AS rank
         FROM (
             SELECT c.entity_id, c.id, c.tsv
             FROM chunks c
             WHERE %(use_text)s AND NOT %(websearch)s AND (SELECT nonempty FROM scope)
               AND (SELECT count(*) FROM fts_all) < %(k)s
               AND c.tsv @@ /*text_query*/ AND /*candidate_filter*/
             LIMIT %(text_max_matches)s
         ) m
         ORDER BY rank DESC
         LIMIT %(n)s)
    ) both_stages
    GROUP BY entity_id, id
    ORDER BY rank DESC
    LIMIT %(n)s
), trgm AS MATERIALIZED (
    -- Fuzzy matching is the fallback for typos and identifiers: it runs only when full text
    -- found fewer than k chunks, since word_similarity over long chunks is costly. In a tiny
    -- scope it compares the scope's chunks directly; otherwise the trigram GIN index picks
    -- candidates, of which it scores at most `trigram_candidates` (arbitrary ones if more).
    -- The query text goes in through a scalar sub-select on purpose: as a plan-time
    -- constant the planner would estimate the word-similarity operator by running it over
    -- the column statistics (~10 ms of planning); as a run-time parameter it takes the
    -- default selectivity and still uses the trigram GIN index.
    SELECT m.entity_id, m.id, word_similarity(%(trigram_query)s::text, m.content) AS sim
    FROM (
        (SELECT c.entity_id, c.id, c.content
         FROM docs JOIN chunks c ON c.entity_id = docs.entity_id AND c.document_id = docs.id
         WHERE %(use_trigram)s AND (SELECT tiny FROM scope) AND (SELECT count(*) FROM fts) < %(k)s
           AND c.entity_id = ANY(%(entity_ids)s::text[])
           AND (%(exclude_chunk_ids)s::uuid[] IS NULL OR c.id <> ALL(%(exclude_chunk_ids)s::uuid[]))
           AND (SELECT %(trigram_query)s::text) <%% c.content)
        UNION ALL
        (SELECT c.entity_id, c.id, c.content
         FROM chunks c
         WHERE %(use_trigram)s AND NOT (SELECT tiny FROM scope) AND (SELECT count(*) FROM fts) < %(k)s
           AND (SELECT %(trigram_query)s::text) <%% c.content AND /*candidate_filter*/
         LIMIT %(trigram_candidates)s)
    ) m
    ORDER BY sim DESC
    LIMIT %(n)s
), pool AS (
    SELECT entity_id, id FROM vec
    UNION SELECT entity_id, id FROM fts
    UNION SELECT entity_id, id FROM trgm
), scored AS (
    -- raw component scores, each already in 0..1
    SELECT c.entity_id, c.id, c.document_id, c.position, c.start_char, c.end_char,
           greatest(1 - (c.embedding <=> %(embedding)s::vector), 0) AS vector,
           coalesce(f.rank / (f.rank + 1), 0) AS text,
           coalesce(t.sim, 0) AS trigram
    FROM pool p
    JOIN chunks c ON c.entity_id = p.entity_id AND c.id = p.id AND c.entity_id = ANY(%(entity_ids)s::text[])
    LEFT JOIN fts f ON f.entity_id = p.entity_id AND f.id = p.id
    LEFT JOIN trgm t ON t.entity_id = p.entity_id AND t.id = p.id
), gated AS (
    -- a component below its threshold (or with no weight) contributes nothing
    SELECT s.*,
           CASE WHEN %(alpha)s > 0 AND s.vector >= %(vector_threshold)s THEN s.vector END AS v,
           CASE WHEN %(alpha)s < 1 AND s.text > 0 AND s.text >= %(text_threshold)s THEN s.text END AS t,
           CASE WHEN %(alpha)s < 1 AND s.trigram > 0 AND s.trigram >= %(trigram_threshold)s THEN s.trigram END AS g
    FROM scored s
), normalized AS (
    -- vector: min-max over the pool; text and trigram have a natural zero, so divide by the max
    SELECT x.*,
           CASE WHEN x.v IS NULL THEN 0
                ELSE coalesce((x.v - min(x.v) OVER ()) / nullif(max(x.v) OVER () - min(x.v) OVER (), 0), 1)
           END AS v_norm,
           (1 - %(trigram_weight)s) * coalesce(x.t / nullif(max(x.t) OVER (), 0), 0)
             + %(trigram_weight)s * coalesce(x.g / nullif(max(x.g) OVER (), 0), 0) AS lexical_raw
    FROM gated x
    WHERE x.v IS NOT NULL OR x.t IS NOT NULL OR x.g IS NOT NULL
), ranked AS (
    SELECT n.*,
           coalesce(n.lexical_raw / nullif(max(n.lexical_raw) OVER (), 0), 0) AS lexical,
           CASE WHEN n.v IS NOT NULL THEN rank() OVER (ORDER BY n.v DESC NULLS LAST) END AS v_rank,
           CASE WHEN n.lexical_raw > 0 THEN rank() OVER (ORDER BY n.lexical_raw DESC) END AS l_rank
    FROM normalized n
), fused AS (
    SELECT r.*,
           CASE WHEN %(fusion)s = 'rrf' THEN
                (%(rrf_k)s + 1) * (%(alpha)s * coalesce(1.0 / (%(rrf_k)s + r.v_rank), 0)
                                   + (1 - %(alpha)s) * coalesce(1.0 / (%(rrf_k)s + r.l_rank), 0))
           ELSE %(alpha)s * r.v_norm + (1 - %(alpha)s) * r.lexical END AS score
    FROM ranked r
), deduped AS (
    -- ties break on (entity, document, position), never on the random chunk id, so the same
    -- corpus ingested twice ranks the same way
    SELECT f.*, row_number() OVER (PARTITION BY f.entity_id, f.document_id ORDER BY f.score DESC, f.position) AS nth
    FROM fused f
), top AS (
    SELECT * FROM deduped
    WHERE NOT %(dedupe)s OR nth = 1
    ORDER BY score DESC, entity_id, document_id, position
    LIMIT %(limit)s
)
SELECT top.id AS chunk_id, top.document_id, top.entity_id, top.position, top.start_char, top.end_char,
       top.score, top.vector, top.text, top.trigram,
       CASE WHEN %(include_text)s THEN c.content END AS content,
       d.title, d.source, d.tags,
       CASE WHEN %(include_summary)s THEN d.summary END AS summary,
       nb.neighbours
FROM top
JOIN chunks c ON c.entity_id = top.entity_id AND c.id = top.id AND c.entity_id = ANY(%(entity_ids)s::text[])
JOIN documents d ON d.entity_id = top.entity_id AND d.id = top.document_id
LEFT JOIN LATERAL (
    SELECT jsonb_agg(jsonb_build_object(
               'chunk_id', n.id, 'position', n.position, 'start_char', n.start_char, 'end_char', n.end_char,
               'text', CASE WHEN %(include_text)s THEN n.content END) ORDER BY n.position) AS neighbours
    FROM chunks n
    WHERE %(neighbours)s > 0
      AND n.entity_id = top.entity_id AND n.document_id = top.document_id
      AND n.entity_id = ANY(%(entity_ids)s::text[])
      AND n.position BETWEEN top.position - %(neighbours)s AND top.position + %(neighbours)s
      AND n.position <> top.position
      AND n.version <= d.ready_version
) nb ON true
ORDER BY top.score DESC, top.entity_id, top.document_id, top.position;

-- name: session_settings
-- HNSW keeps this many candidates while walking the graph (pgvector's default is 40, the
-- same as the smallest candidate count a search asks for: more gives better recall of it).
SELECT set_config('hnsw.ef_search', %(ef_search)s, false);

-- name: semantic_prune
-- Semantic-cache pointers older than the result TTL point at expired results.
DELETE FROM vector_index
WHERE index_name = %(index)s AND created_at < now() - make_interval(secs => %(ttl)s);

-- Direct loading of ready documents and chunks (tests, EXPLAIN and load scripts: shared/search/loader.py).

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
             token_count, model_id, embedding) FROM STDIN WITH (FORMAT BINARY);

-- name: loader_chunk_ids
SELECT document_id, id FROM chunks
WHERE entity_id = %(entity)s AND document_id = ANY(%(ids)s)
ORDER BY document_id, position;

-- name: explain_indexes
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND (tablename LIKE 'chunks%%' OR tablename = 'documents');

-- name: explain_drop_hnsw
-- Bulk loads into a fresh database: building HNSW once after COPY is several times
-- faster than inserting into it row by row. Same definition as 0001_init.sql.
DROP INDEX IF EXISTS chunks_embedding_idx;

-- name: explain_create_hnsw
CREATE INDEX IF NOT EXISTS chunks_embedding_idx ON chunks
USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
