-- name: upsert
INSERT INTO vector_index (index_name, namespace, id, model_id, embedding, metadata)
VALUES (%(index)s, %(namespace)s, %(id)s, %(model)s, %(embedding)s, %(metadata)s)
ON CONFLICT (index_name, id) DO UPDATE
SET namespace = EXCLUDED.namespace, model_id = EXCLUDED.model_id,
    embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata, created_at = now();

-- name: query
-- The nearest past queries of one scope. A scope with few entries (the usual case: one per
-- entity set and parameters) is searched exactly: its rows through the (index_name, namespace)
-- b-tree, sorted by distance ("+ 0" keeps the planner off the HNSW index, whose filtered walk
-- would visit up to hnsw.max_scan_tuples vectors of other scopes to find a handful). A scope
-- with at least %(exact_max)s entries walks the HNSW index (migration 0012) instead; an
-- iterative scan may return neighbours slightly out of order (hnsw.iterative_scan =
-- relaxed_order), so what is found is sorted again. Only one branch runs (one-time filters).
WITH size AS MATERIALIZED (
    SELECT count(*) AS n FROM (
        SELECT 1 FROM vector_index
        WHERE index_name = %(index)s AND namespace = %(namespace)s
        LIMIT %(exact_max)s
    ) few
),
exact AS MATERIALIZED (
    SELECT id, embedding <=> %(embedding)s AS distance, metadata
    FROM vector_index
    WHERE (SELECT n FROM size) < %(exact_max)s
      AND index_name = %(index)s AND namespace = %(namespace)s AND model_id = %(model)s
    ORDER BY (embedding <=> %(embedding)s) + 0
    LIMIT %(k)s
),
approximate AS MATERIALIZED (
    SELECT id, embedding <=> %(embedding)s AS distance, metadata
    FROM vector_index
    WHERE (SELECT n FROM size) >= %(exact_max)s
      AND index_name = %(index)s AND namespace = %(namespace)s AND model_id = %(model)s
    ORDER BY embedding <=> %(embedding)s
    LIMIT %(k)s
)
SELECT id, 1 - distance AS score, metadata
FROM (SELECT * FROM exact UNION ALL SELECT * FROM approximate) found
ORDER BY distance;

-- name: delete
DELETE FROM vector_index WHERE index_name = %(index)s AND id = ANY(%(ids)s);

-- name: count
SELECT count(*) AS n FROM vector_index
WHERE index_name = %(index)s AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s);
