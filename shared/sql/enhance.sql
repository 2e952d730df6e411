-- Query enhancement (shared/search/enhance/). Pseudo-relevance feedback in the style of RM3: the
-- first pass's best chunks stand in for "relevant", and the terms they share weigh in.

-- name: prf_terms
-- The relevance model over the feedback chunks: P(w|R) = sum over chunks of P(w|chunk) times
-- the chunk's first-pass score (its share of the feedback), multiplied by the term's idf in its
-- own configuration among the searched entities (so words every chunk holds do not win). Only
-- lexemes of the chunks' own configurations: expansion works in any language the chunks are in.
WITH feedback AS MATERIALIZED (
    SELECT row_number() OVER () AS nth, c.text_config AS config, c.tsv,
           f.weight / greatest(sum(f.weight) OVER (), 1e-9) AS weight
    FROM unnest(%(feedback_entity_ids)s::text[], %(feedback_ids)s::uuid[], %(feedback_weights)s::float8[])
         AS f (entity_id, id, weight)
    JOIN chunks c ON c.entity_id = f.entity_id AND c.id = f.id AND c.entity_id = ANY(%(entity_ids)s::text[])
), query_terms AS MATERIALIZED (
    -- the query as each feedback configuration reads it: its own words are no expansion
    SELECT g.config, q.lexeme AS term
    FROM (SELECT DISTINCT config FROM feedback) g
    CROSS JOIN LATERAL unnest(to_tsvector(g.config, %(query)s)) AS q
), occurrences AS (
    SELECT fb.nth, fb.config, fb.weight, u.lexeme AS term,
           coalesce(array_length(u.positions, 1), 1)::float8 AS tf
    FROM feedback fb CROSS JOIN LATERAL unnest(fb.tsv) AS u
), model AS (
    SELECT o.config, o.term, sum(o.weight * o.tf / l.length) AS p, count(*) AS chunks
    FROM occurrences o
    JOIN (SELECT nth, greatest(sum(tf), 1) AS length FROM occurrences GROUP BY nth) l ON l.nth = o.nth
    WHERE length(o.term) >= %(min_chars)s
      AND NOT EXISTS (SELECT 1 FROM query_terms q WHERE q.config = o.config AND q.term = o.term)
    GROUP BY o.config, o.term
    HAVING count(*) >= %(min_chunks)s
), stats AS (
    SELECT s.config, greatest(sum(s.chunks), 1)::float8 AS n
    FROM entity_stats s WHERE s.entity_id = ANY(%(entity_ids)s::text[]) AND s.chunks > 0
    GROUP BY s.config
)
SELECT m.config::text AS config, m.term, m.p * ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS score
FROM model m
JOIN stats st ON st.config = m.config
CROSS JOIN LATERAL (
    SELECT coalesce(sum(t.df), 0)::float8 AS df FROM term_stats t
    WHERE t.entity_id = ANY(%(entity_ids)s::text[]) AND t.config = m.config AND t.term = m.term
) d
-- a term most chunks hold says nothing about this query
WHERE d.df <= st.n * %(max_df_share)s
ORDER BY score DESC, m.term
LIMIT %(terms)s;
