-- Hybrid search: BM25 full text with typo stand-ins, HNSW vector search, fused in Postgres.
--   The lexical half needs only the query text: BM25 over candidates from the GIN tsvector
--     index, where query words the entities have never seen (typos) are replaced by their
--     closest vocabulary terms (pg_trgm over `term_stats`, see infra/migrations/0003_term_stats.sql).
--   The vector half needs the embedding: HNSW (cosine, iterative scan so filters still yield n),
--     or exact distances when the scope is small; the union with the lexical chunks is
--     scored on every component, normalized, fused, optionally deduplicated per document,
--     and the top `limit` rows come back with document fields.
-- Three statements are assembled from the fragments below (shared/search/engine.py, once, at
-- import time, so the retrievers cannot drift apart in what they let through):
--   `search`  both halves in one statement: one round trip, one plan, nothing sent back and
--             forth. Used whenever the query is embedded before the SQL starts and the blend is
--             known (a fixed strategy; the cache's semantic lookup needs the embedding first anyway).
--   `lexical` then `hybrid`: the halves apart, when the lexical half must run while the query
--             is embedded (cache off), or its evidence decides the blend (the router, "auto"),
--             or decides a second lexical pass (query enhancement). `lexical` returns its best n
--             chunks as arrays, which `hybrid` takes back.
--
-- Order of work: the entity set prunes partitions (entity_id = ANY(...) with a constant
-- array; plans are custom, see bindings/database.py), the chunk- and document-level
-- filters narrow candidates inside each index scan, then each retriever keeps its best n.

-- name: candidate_filter
/*chunk_filter*/
/*document_filter*/

-- name: chunk_filter
c.entity_id = ANY(%(entity_ids)s::text[])
AND (%(document_ids)s::text[] IS NULL OR c.document_id = ANY(%(document_ids)s::text[]))
AND (%(exclude_document_ids)s::text[] IS NULL OR c.document_id <> ALL(%(exclude_document_ids)s::text[]))
AND (%(exclude_chunk_ids)s::uuid[] IS NULL OR c.id <> ALL(%(exclude_chunk_ids)s::uuid[]))

-- name: document_filter
-- Ingestion commits a version's chunks in the same transaction that sets ready_version
-- (ingest/workflow.py, upsert), so every committed chunk is live: the documents table is
-- only consulted when a document-level filter is given (a constant false folds it away; the
-- one-statement search leaves the fragment out then, which spares its planning: engine.py).
AND (NOT %(document_filters)s OR EXISTS (
    SELECT 1 FROM documents d
    WHERE d.entity_id = c.entity_id AND d.id = c.document_id
      AND c.version <= d.ready_version
      AND (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(tags)s::text[] IS NULL OR d.tags && %(tags)s::text[])
      AND (%(collections)s::text[] IS NULL OR d.collection = ANY(%(collections)s::text[]))
      AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
      AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
      AND (%(updated_after)s::timestamptz IS NULL OR d.updated_at >= %(updated_after)s::timestamptz)
      AND (%(updated_before)s::timestamptz IS NULL OR d.updated_at < %(updated_before)s::timestamptz)))

-- name: text_query_all
-- Chunks holding every word (or matching the websearch query, which says exactly what must match),
-- with the query parsed as the chunk's own text-search configuration: the OR of the scope's
-- configurations for the index, then the chunk's own one (`configs` is in `lexical`).
c.tsv @@ (SELECT tsquery_or_all(g.query_all) FROM configs g)
AND c.tsv @@ (SELECT g.query_all FROM configs g WHERE g.config = c.text_config)

-- name: documents_in_scope
docs AS MATERIALIZED (
    -- Documents in scope, at most one more than the exact-search bound: a cheap index scan
    -- that tells whether the candidate set is small enough to skip the HNSW index.
    SELECT d.entity_id, d.id, d.chunk_count
    FROM documents d
    WHERE d.entity_id = ANY(%(entity_ids)s::text[]) AND d.ready_version IS NOT NULL
      AND (%(document_ids)s::text[] IS NULL OR d.id = ANY(%(document_ids)s::text[]))
      AND (%(exclude_document_ids)s::text[] IS NULL OR d.id <> ALL(%(exclude_document_ids)s::text[]))
      AND (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(tags)s::text[] IS NULL OR d.tags && %(tags)s::text[])
      AND (%(collections)s::text[] IS NULL OR d.collection = ANY(%(collections)s::text[]))
      AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
      AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
      AND (%(updated_after)s::timestamptz IS NULL OR d.updated_at >= %(updated_after)s::timestamptz)
      AND (%(updated_before)s::timestamptz IS NULL OR d.updated_at < %(updated_before)s::timestamptz)
    LIMIT %(exact_max_docs)s + 1
), scope AS MATERIALIZED (
    -- Without a document-level filter the scope is every chunk of the entities, and entity_stats keeps
    -- their number (triggers on chunks, in the writing transaction: infra/migrations/0006_languages.sql).
    -- Past the exact bound that number settles it, and `docs` is never read: the first branch's row ends
    -- the LIMIT before the second starts (a big tenant's search read 501 document rows for this).
    -- A larger scope is still searched exactly when it is a small share of the partitions it spans
    -- (the planner's row counts; its entities hash to at most that many partitions): there the HNSW
    -- walk of each partition passes over ~1/share rows for every one in scope, and the exact scan
    -- reads only the scope's own rows.
    -- `few`: the entities' chunks (whatever the filters keep of them) are few enough to match each
    -- one's text rather than walk the full-text GIN index.
    SELECT true AS nonempty,
           n.chunks <= %(exact_selective_max_chunks)s
           AND n.chunks <= %(exact_max_share)s * t.rows * least(n.entities, t.parts) / greatest(t.parts, 1)
             AS exact,
           false AS few
    FROM (SELECT coalesce(sum(s.chunks), 0) AS chunks, count(*) AS entities FROM entity_stats s
          WHERE s.entity_id = ANY(%(entity_ids)s::text[])) n,
         -- pg_class by its oid index for each partition, not a join: a join's plan would follow
         -- the size of the catalogue (every migration's tables), and so differ between plans
         (SELECT count(*) AS parts,
                 coalesce(sum(greatest((SELECT p.reltuples FROM pg_class p WHERE p.oid = i.inhrelid), 0)), 0) AS rows
          FROM pg_inherits i
          WHERE i.inhparent = 'chunks'::regclass) t
    WHERE %(document_ids)s::text[] IS NULL AND %(exclude_document_ids)s::text[] IS NULL
      AND %(sources)s::text[] IS NULL AND %(tags)s::text[] IS NULL AND %(collections)s::text[] IS NULL
      AND %(created_after)s::timestamptz IS NULL AND %(created_before)s::timestamptz IS NULL
      AND %(updated_after)s::timestamptz IS NULL AND %(updated_before)s::timestamptz IS NULL
      AND n.chunks > %(exact_max_chunks)s
    UNION ALL
    SELECT count(*) > 0,
           count(*) <= %(exact_max_docs)s AND coalesce(sum(chunk_count), 0) <= %(exact_max_chunks)s,
           (SELECT coalesce(sum(s.chunks), 0) FROM entity_stats s
            WHERE s.entity_id = ANY(%(entity_ids)s::text[])) <= %(exact_max_chunks)s
    FROM docs
    LIMIT 1
)

-- name: lexical_ctes
-- Everything that needs no embedding (it runs while the worker embeds the query): how large
-- the scope is, which decides the vector path, and BM25 over the chunks in scope.
configs AS MATERIALIZED (
    -- The text-search configurations of the chunks in scope (infra/migrations/0006_languages.sql),
    -- each with BM25's collection statistics over its own chunks: their number and average
    -- length (in distinct lexemes, what length(tsv) counts); and the query as a whole, parsed
    -- with it, for the all-words candidates.
    SELECT s.config, greatest(sum(s.chunks), 1)::float8 AS n,
           greatest(coalesce(sum(s.lexemes)::float8 / nullif(sum(s.chunks), 0), 1), 1) AS avg_length,
           CASE WHEN %(websearch)s THEN websearch_to_tsquery(s.config, %(query)s)
                ELSE plainto_tsquery(s.config, %(query)s) END AS query_all
    FROM entity_stats s
    WHERE %(use_text)s AND s.entity_id = ANY(%(entity_ids)s::text[]) AND s.chunks > 0
    GROUP BY s.config
), words AS MATERIALIZED (
    -- the query's lexemes as full text sees them in each configuration (stemmed, stop words
    -- gone), where in the query each stands, and how many chunks of that configuration in the
    -- searched entities hold each
    -- (one primary-key probe per entity and term: a term many entities hold would otherwise be
    -- looked up in the trigram index, which holds it for every entity of the partition)
    SELECT q.config, q.term, q.positions, coalesce(sum(s.df), 0)::float8 AS df
    FROM (SELECT g.config, u.lexeme AS term, u.positions
          FROM configs g CROSS JOIN LATERAL unnest(to_tsvector(g.config, %(query)s)) AS u) q
    CROSS JOIN unnest(%(entity_ids)s::text[]) AS e(id)
    LEFT JOIN term_stats s ON s.entity_id = e.id AND s.config = q.config AND s.term = q.term
    GROUP BY q.config, q.term, q.positions
)/*expansion_cte*/
, fuzzy AS MATERIALIZED (
    -- A query word that no chunk in scope holds (a typo, most often) is replaced by the
    -- entities' closest vocabulary terms of the same configuration, each counted at its
    -- trigram similarity: short terms through the trigram GIN index, never word similarity
    -- over whole chunks. A word some configuration knows is no typo, whatever the others
    -- make of it (all configurations share the parser, so positions line up).
    SELECT w.config, w.term AS word, v.term, v.df, v.similarity
    FROM (SELECT config, term FROM words
          WHERE %(use_trigram)s AND df = 0 AND length(term) >= %(fuzzy_min_chars)s
            AND NOT positions && (SELECT coalesce(array_agg(p), '{}') FROM words k, unnest(k.positions) p
                                  WHERE k.df > 0)
          ORDER BY length(term) DESC, term, config
          LIMIT %(fuzzy_max_words)s) w
    CROSS JOIN LATERAL (
        SELECT s.term, sum(s.df)::float8 AS df, similarity(s.term, w.term) AS similarity
        FROM term_stats s
        WHERE s.entity_id = ANY(%(entity_ids)s::text[]) AND s.config = w.config AND s.term %% w.term
        GROUP BY s.term
        ORDER BY similarity DESC, s.term
        LIMIT %(fuzzy_terms)s
    ) v
    WHERE v.similarity >= %(trigram_threshold)s
), weighed AS MATERIALIZED (
    -- BM25 idf (Robertson/Lucene) of every query word, known or not, and of every stand-in,
    -- within its configuration; weight 1, or the stand-in's similarity, or the expansion's weight
    SELECT t.config, t.term, t.df, t.weight, t.fuzzy, t.expansion, ln(1 + (g.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM (SELECT config, term, df, 1.0::float8 AS weight, false AS fuzzy, false AS expansion FROM words
          UNION ALL
          SELECT config, term, df, similarity, true, false FROM fuzzy
          /*expansion_terms*/) t
    JOIN configs g ON g.config = t.config
), terms AS MATERIALIZED (
    -- every term the lexical score counts (query words some chunk holds, and the stand-ins):
    -- a one-lexeme tsquery, and its place among the terms by rarity (idf: document frequencies
    -- of different configurations count among different numbers of chunks)
    -- (the rarest query word and the rarest expansion term always bring their chunks: an
    -- expansion must not crowd out the query's own words, nor be crowded out entirely)
    SELECT w.config, w.term, w.df, w.weight, w.fuzzy, w.idf, lexeme_query(w.term) AS query,
           sum(w.df) OVER (ORDER BY w.idf DESC, w.term, w.config) AS running_df,
           row_number() OVER (ORDER BY w.idf DESC, w.term, w.config) AS rarity,
           row_number() OVER (PARTITION BY w.expansion ORDER BY w.idf DESC, w.term, w.config) AS rarity_within
    FROM weighed w
    WHERE w.df > 0 OR w.fuzzy
), best AS MATERIALIZED (
    -- what a chunk holding every query word (and expansion term, at its weight), many times,
    -- would score: scores are shares of it
    -- (per configuration: a chunk is scored with the query as its own configuration parses it)
    SELECT w.config, greatest(sum(w.weight * w.idf) * (%(bm25_k1)s + 1), 1e-9) AS score
    FROM weighed w
    WHERE NOT w.fuzzy
    GROUP BY w.config
), lexical_candidates AS MATERIALIZED (
    -- Which chunks BM25 scores. Ranking every chunk that shares one common word with the
    -- query does not scale, so: the chunks holding any of the rarest terms, taking terms
    -- from the rarest up while their chunks add up to `text_max_matches` (always at least
    -- the rarest) ...
    -- A scope of few chunks (`scope.few`) is read by entity and each chunk's text matched
    -- (ts_match_vq is the @@ operator as a function, which no index serves); any other through
    -- the full-text GIN index. The GIN index returns every chunk of the partition that holds the
    -- term, whoever's it is: ~25,000 for a common word at 1.2M chunks, to keep a small tenant's few.
    (SELECT c.entity_id, c.id, c.text_config, c.tsv
     FROM chunks c
     WHERE %(use_text)s AND NOT %(websearch)s AND (SELECT nonempty AND few FROM scope)
       AND ts_match_vq(c.tsv, (SELECT tsquery_or_all(t.query) FROM terms t
                               WHERE t.rarity = 1 OR t.rarity_within = 1 OR t.running_df <= %(text_max_matches)s))
       AND /*candidate_filter*/
     LIMIT %(text_max_matches)s)
    UNION ALL
    (SELECT c.entity_id, c.id, c.text_config, c.tsv
     FROM chunks c
     WHERE %(use_text)s AND NOT %(websearch)s AND (SELECT nonempty AND NOT few FROM scope)
       AND c.tsv @@ (SELECT tsquery_or_all(t.query) FROM terms t
                     WHERE t.rarity = 1 OR t.rarity_within = 1 OR t.running_df <= %(text_max_matches)s)
       AND /*candidate_filter*/
     LIMIT %(text_max_matches)s)
    UNION ALL
    -- ... and the chunks holding every word (or matching the websearch query), which the
    -- first set misses only when even the rarest term is common (then both are capped).
    (SELECT c.entity_id, c.id, c.text_config, c.tsv
     FROM chunks c
     WHERE %(use_text)s AND (SELECT nonempty AND few FROM scope)
       AND ts_match_vq(c.tsv, (SELECT tsquery_or_all(g.query_all) FROM configs g))
       AND c.tsv @@ (SELECT g.query_all FROM configs g WHERE g.config = c.text_config)
       AND /*candidate_filter*/
     LIMIT %(text_max_matches)s)
    UNION ALL
    (SELECT c.entity_id, c.id, c.text_config, c.tsv
     FROM chunks c
     WHERE %(use_text)s AND (SELECT nonempty AND NOT few FROM scope) AND /*text_query_all*/
       AND /*candidate_filter*/
     LIMIT %(text_max_matches)s)
), fts AS MATERIALIZED (
    -- BM25 (Robertson/Lucene idf, k1, b); the term frequency of a one-lexeme query is what
    -- ts_rank_cd returns with unit weights (an occurrence in the chunk's enrichment, weight C,
    -- counts ENRICHMENT_WEIGHT). Query words (and expansion terms) count as `text`, stand-ins
    -- for misspelled ones as `trigram`.
    SELECT entity_id, id, text, trigram
    FROM (
        SELECT x.entity_id, x.id,
               coalesce(sum(s.part) FILTER (WHERE NOT s.fuzzy), 0) / b.score AS text,
               coalesce(sum(s.part) FILTER (WHERE s.fuzzy), 0) / b.score AS trigram
        FROM (SELECT DISTINCT ON (entity_id, id) entity_id, id, text_config, tsv FROM lexical_candidates) x
        JOIN configs c ON c.config = x.text_config
        JOIN best b ON b.config = x.text_config
        CROSS JOIN LATERAL (
            SELECT t.fuzzy, t.weight * t.idf * f.tf * (%(bm25_k1)s + 1)
                   / (f.tf + %(bm25_k1)s * (1 - %(bm25_b)s + %(bm25_b)s * length(x.tsv) / c.avg_length)) AS part
            -- OFFSET 0 keeps the planner from inlining tf into its three uses: one call, not three
            -- (weights {D, C, B, A}: a chunk's own words are D, its enrichment C: infra/migrations/0010)
            FROM terms t CROSS JOIN LATERAL (SELECT ts_rank_cd(%(tsv_weights)s::float4[], x.tsv, t.query)::float8 AS tf OFFSET 0) f
            WHERE t.config = x.text_config AND f.tf > 0
        ) s
        GROUP BY x.entity_id, x.id, b.score
    ) bm25
    ORDER BY text + trigram DESC, entity_id, id
    LIMIT %(n)s
)

-- name: expansion_cte
, expanded AS MATERIALIZED (
    -- Query enhancement (shared/search/enhance/): extra terms at a lower weight, either lexemes of a
    -- configuration (pseudo-relevance feedback picks them from chunks' tsvectors) or text parsed
    -- with every configuration in scope (an LLM's synonyms); never a word the query already has.
    -- Empty arrays and a NULL text (no enhancement) leave the statement as it was.
    SELECT e.config, e.term, max(e.weight) AS weight, coalesce(sum(s.df), 0)::float8 AS df
    FROM (SELECT x.config, x.term, x.weight
          FROM unnest(%(expansion_configs)s::regconfig[], %(expansion_terms)s::text[],
                      %(expansion_weights)s::float8[]) AS x (config, term, weight)
          UNION ALL
          SELECT g.config, u.lexeme, %(expansion_text_weight)s::float8
          FROM configs g CROSS JOIN LATERAL unnest(to_tsvector(g.config, %(expansion_text)s::text)) AS u
          WHERE %(expansion_text)s::text IS NOT NULL) e
    JOIN configs g ON g.config = e.config
    CROSS JOIN unnest(%(entity_ids)s::text[]) AS n(id)   -- a probe per entity, as in `words`
    LEFT JOIN term_stats s ON s.entity_id = n.id AND s.config = e.config AND s.term = e.term
    WHERE NOT EXISTS (SELECT 1 FROM words w WHERE w.config = e.config AND w.term = e.term)
    GROUP BY e.config, e.term)

-- name: expansion_terms
-- the expansion's terms beside the query's (absent from the one-statement search, which never
-- has any: query enhancement takes the two-statement path)
UNION ALL
SELECT config, term, df, weight, false, true FROM expanded

-- name: lexical_summary
summary AS (
    -- whether the scope holds anything and is small enough for exact vector search, which
    -- vocabulary terms stood in for which unknown words, and the router's evidence
    SELECT (SELECT nonempty FROM scope) AS nonempty, (SELECT exact FROM scope) AS exact,
           (SELECT jsonb_object_agg(f.word, f.terms)
            FROM (SELECT word, jsonb_agg(term ORDER BY similarity DESC, term) AS terms FROM fuzzy GROUP BY word) f
           ) AS corrections,
           -- first-pass evidence for the router (shared/routing/features.py), from the configuration
           -- that knows most query terms: how many terms, how many some chunk holds, how many are rare
           -- (held by at most one chunk in a hundred), the best idf and the number of chunks it is relative to
           (SELECT jsonb_build_object('terms', e.terms, 'matched', e.matched, 'rare', e.rare,
                                      'best_idf', e.best_idf, 'chunks', e.chunks)
            FROM (SELECT count(*) AS terms, count(*) FILTER (WHERE w.df > 0) AS matched,
                         count(*) FILTER (WHERE w.df > 0 AND w.df <= 0.01 * g.n) AS rare,
                         max(w.idf) FILTER (WHERE w.df > 0) AS best_idf, max(g.n) AS chunks
                  FROM weighed w JOIN configs g ON g.config = w.config
                  WHERE NOT w.fuzzy
                  GROUP BY w.config
                  ORDER BY matched DESC, terms DESC, w.config
                  LIMIT 1) e
           ) AS evidence
)

-- name: lexical
WITH /*documents_in_scope*/, /*lexical_ctes*/, /*lexical_summary*/, probe AS MATERIALIZED (
    -- The router's probe (shared/routing/features.py; `probe` = 0 unless the router decides):
    -- the best BM25 chunks' stored language and vector (binary, as pgvector sends it), so the
    -- worker can measure, once the query is embedded, whether the embedding model knows their
    -- language and agrees with full text about them, without a second statement.
    SELECT f.rank, c.language, vector_send(c.embedding) AS vector
    FROM (SELECT entity_id, id, row_number() OVER (ORDER BY text + trigram DESC, entity_id, id) AS rank
          FROM fts ORDER BY text + trigram DESC, entity_id, id LIMIT %(probe)s) f
    JOIN chunks c ON c.entity_id = f.entity_id AND c.id = f.id AND c.entity_id = ANY(%(entity_ids)s::text[])
)
-- one row, even when nothing matched: the scope, the chunks as parallel arrays (one aggregate
-- pass, so aligned), the corrections and the evidence
SELECT (SELECT nonempty FROM summary) AS nonempty, (SELECT exact FROM summary) AS exact,
       coalesce(array_agg(entity_id), '{}') AS entity_ids, coalesce(array_agg(id), '{}') AS ids,
       coalesce(array_agg(text), '{}') AS text, coalesce(array_agg(trigram), '{}') AS trigram,
       (SELECT corrections FROM summary) AS corrections, (SELECT evidence FROM summary) AS evidence,
       (SELECT array_agg(p.language ORDER BY p.rank) FROM probe p) AS probe_languages,
       (SELECT array_agg(p.vector ORDER BY p.rank) FROM probe p) AS probe_vectors
FROM fts;

-- name: hybrid_ctes
-- Vector retrieval, then fusion with the lexical half's best chunks (CTE `fts`) and its
-- verdict on the scope (`exact`, `nonempty`: parameters in `hybrid`, the `scope` CTE in `search`).
vec AS MATERIALIZED (
    -- Few candidate chunks (a small tenant, or selective filters): exact distances over
    -- them. Otherwise HNSW, filtering inside the scan; filtered HNSW is at its worst
    -- exactly when the filters are selective, which is the case the exact branch takes.
    -- The branch not taken is never run (its `docs` never read): folded away at planning time
    -- in `hybrid`, skipped by a one-time filter on the `scope` CTE in `search`.
    (SELECT c.entity_id, c.id
     FROM docs JOIN chunks c ON c.entity_id = docs.entity_id AND c.document_id = docs.id
     WHERE %(use_vector)s AND %(exact)s AND %(document_filters)s
       AND c.entity_id = ANY(%(entity_ids)s::text[])
       AND (%(exclude_chunk_ids)s::uuid[] IS NULL OR c.id <> ALL(%(exclude_chunk_ids)s::uuid[]))
     ORDER BY c.embedding <=> %(embedding)s::vector
     LIMIT %(n)s)
    UNION ALL
    -- Without document-level filters the chunks in scope are those the chunk filter keeps
    -- (every committed chunk is live: see `document_filter`), read by entity, `docs` unread (it
    -- may hold only the first of them: its LIMIT).
    (SELECT c.entity_id, c.id
     FROM chunks c
     WHERE %(use_vector)s AND %(exact)s AND NOT %(document_filters)s AND /*chunk_filter*/
     ORDER BY c.embedding <=> %(embedding)s::vector
     LIMIT %(n)s)
    UNION ALL
    -- The walk is over the half-precision index (infra/migrations/0021_chunks_halfvec_hnsw.sql):
    -- the expression must be the index's own, dimension included (`dimension` is the
    -- embedding's, "(384)", written in by engine.py; the `dimension` fragment is empty, for the
    -- text without an embedding), and only the candidates come from it: `scored` below gives
    -- each its full-precision distance.
    (SELECT c.entity_id, c.id
     FROM chunks c
     WHERE %(use_vector)s AND %(nonempty)s AND NOT %(exact)s AND /*candidate_filter*/
     ORDER BY c.embedding::halfvec/*dimension*/ <=> %(embedding)s::vector::halfvec
     LIMIT %(n)s)
), pool AS (
    -- each candidate once, with its lexical scores (0 where only the vector side found it):
    -- grouping, not a join back to the lexical rows, which the planner would loop over
    SELECT entity_id, id, max(text) AS text, max(trigram) AS trigram
    FROM (SELECT entity_id, id, 0::float8 AS text, 0::float8 AS trigram FROM vec
          UNION ALL
          SELECT entity_id, id, text, trigram FROM fts) candidates
    GROUP BY entity_id, id
), scored AS (
    -- raw component scores, each already in 0..1; a vector of another model than the query's (a
    -- worker that has not yet followed a model cutover) is not comparable and scores nothing
    SELECT c.entity_id, c.id, c.document_id, c.position, c.start_char, c.end_char,
           CASE WHEN c.model_id = %(model_id)s THEN greatest(1 - (c.embedding <=> %(embedding)s::vector), 0)
                ELSE 0 END AS vector, p.text, p.trigram
    FROM pool p
    JOIN chunks c ON c.entity_id = p.entity_id AND c.id = p.id AND c.entity_id = ANY(%(entity_ids)s::text[])
), gated AS (
    -- a component below its threshold (or with no weight) contributes nothing
    SELECT s.*,
           CASE WHEN %(alpha)s > 0 AND s.vector >= %(vector_threshold)s THEN s.vector END AS v,
           CASE WHEN %(alpha)s < 1 AND s.text + s.trigram > 0 AND s.text + s.trigram >= %(text_threshold)s
                THEN s.text + s.trigram END AS l
    FROM scored s
), ranked AS (
    -- vector: min-max over the pool; the lexical score has a natural zero, so divide by the max.
    -- Ranks (for RRF) order by the raw scores, which orders as the normalized ones do.
    SELECT x.*,
           CASE WHEN x.v IS NULL THEN 0
                ELSE coalesce((x.v - min(x.v) OVER ()) / nullif(max(x.v) OVER () - min(x.v) OVER (), 0), 1)
           END AS v_norm,
           coalesce(x.l / nullif(max(x.l) OVER (), 0), 0) AS lexical,
           CASE WHEN x.v IS NOT NULL THEN rank() OVER (ORDER BY x.v DESC NULLS LAST) END AS v_rank,
           CASE WHEN x.l IS NOT NULL THEN rank() OVER (ORDER BY x.l DESC NULLS LAST) END AS l_rank
    FROM gated x
    WHERE x.v IS NOT NULL OR x.l IS NOT NULL
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

-- name: dimension

-- name: hybrid_select
SELECT top.id AS chunk_id, top.document_id, top.entity_id, top.position, top.start_char, top.end_char,
       top.score, top.vector, top.text, top.trigram,
       CASE WHEN %(include_text)s THEN c.content END AS content,
       c.copy_fingerprint, c.copy_simhash, c.context_tokens,   -- a trajectory step's (migration 0031)
       d.title, d.source, d.tags,
       CASE WHEN %(include_summary)s THEN d.summary END AS summary,
       /*neighbours_column*/
FROM top
JOIN chunks c ON c.entity_id = top.entity_id AND c.id = top.id AND c.entity_id = ANY(%(entity_ids)s::text[])
JOIN documents d ON d.entity_id = top.entity_id AND d.id = top.document_id
/*neighbours_join*/
ORDER BY top.score DESC, top.entity_id, top.document_id, top.position

-- name: neighbours_column
nb.neighbours

-- name: neighbours_join
-- each result's neighbouring chunks (include.neighbours; the one-statement search leaves this
-- join out when none are asked, and answers NULL, what it gives then: engine.py)
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

-- name: hybrid
-- Vector retrieval, then fusion with the chunks `lexical` returned (passed back as arrays,
-- with its verdict on the scope: `exact`, `nonempty`).
WITH /*documents_in_scope*/, fts AS (
    -- the lexical statement's best chunks
    SELECT * FROM unnest(%(lexical_entity_ids)s::text[], %(lexical_ids)s::uuid[],
                         %(lexical_text)s::float8[], %(lexical_trigram)s::float8[]) AS f (entity_id, id, text, trigram)
), /*hybrid_ctes*/
/*hybrid_select*/;

-- name: search
-- Both halves in one statement; the one-row `summary` is joined to the results so that the
-- corrections and the evidence come back even when no chunk does (one row, chunk_id NULL).
-- Those two come as text: the driver would decode each row's copy of them as JSON, and the worker
-- reads them once (engine.search).
WITH /*documents_in_scope*/, /*lexical_ctes*/, /*lexical_summary*/, /*hybrid_ctes*/
SELECT r.*, s.nonempty, s.exact, s.corrections::text AS corrections, s.evidence::text AS evidence
FROM summary s LEFT JOIN (
/*hybrid_select*/
) r ON true
ORDER BY r.score DESC, r.entity_id, r.document_id, r.position;

-- name: session_settings
-- HNSW keeps this many candidates while walking the graph (pgvector's default is 40, the
-- same as the smallest candidate count a search asks for: more gives better recall of it).
-- The trigram index returns vocabulary terms at least this similar to a misspelled word
-- (the request's trigram_threshold then applies on top).
SELECT set_config('hnsw.ef_search', %(ef_search)s, false),
       set_config('pg_trgm.similarity_threshold', %(fuzzy_similarity)s, false);

-- name: semantic_prune
-- Semantic-cache pointers older than the result TTL point at expired results.
DELETE FROM vector_index
WHERE index_name = %(index)s AND created_at < now() - make_interval(secs => %(ttl)s);
