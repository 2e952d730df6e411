-- name: upsert
-- `indexed` (migration 0016): whether the vector goes into the HNSW graph, which only lookups in
-- a scope of at least %(exact_max)s vectors walk; in a smaller scope it would be pure cost.
INSERT INTO vector_index (index_name, namespace, id, model_id, embedding, metadata, indexed)
VALUES (%(index)s, %(namespace)s, %(id)s, %(model)s, %(embedding)s, %(metadata)s,
        (SELECT count(*) >= %(exact_max)s FROM (
             SELECT 1 FROM vector_index
             WHERE index_name = %(index)s AND namespace = %(namespace)s
             LIMIT %(exact_max)s) few))
ON CONFLICT (index_name, id) DO UPDATE
SET namespace = EXCLUDED.namespace, model_id = EXCLUDED.model_id,
    embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata, indexed = EXCLUDED.indexed,
    created_at = now();

-- name: query
-- The nearest past queries of one scope. A scope with few entries (the usual case: one per
-- entity set and parameters) is searched exactly: its rows through the (index_name, namespace)
-- b-tree, sorted by distance ("+ 0" keeps the planner off the HNSW index, whose filtered walk
-- would visit up to hnsw.max_scan_tuples vectors of other scopes to find a handful). A scope
-- with at least %(exact_max)s entries walks the HNSW index (migrations 0012, 0016) for its
-- indexed vectors, and reads exactly those stored while it was small (not in the graph: at most
-- %(exact_max)s); an iterative scan may return neighbours slightly out of order
-- (hnsw.iterative_scan = relaxed_order), so what is found is sorted again. Only the branches
-- of the scope's size run (one-time filters).
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
not_indexed AS MATERIALIZED (
    -- a large scope's vectors stored while it was small, through their own partial b-tree
    SELECT id, embedding <=> %(embedding)s AS distance, metadata
    FROM vector_index
    WHERE (SELECT n FROM size) >= %(exact_max)s AND NOT indexed
      AND index_name = %(index)s AND namespace = %(namespace)s AND model_id = %(model)s
    ORDER BY (embedding <=> %(embedding)s) + 0
    LIMIT %(k)s
),
approximate AS MATERIALIZED (
    SELECT id, embedding <=> %(embedding)s AS distance, metadata
    FROM vector_index
    WHERE (SELECT n FROM size) >= %(exact_max)s AND indexed
      AND index_name = %(index)s AND namespace = %(namespace)s AND model_id = %(model)s
    ORDER BY embedding <=> %(embedding)s
    LIMIT %(k)s
)
SELECT id, 1 - distance AS score, metadata
FROM (SELECT * FROM exact UNION ALL SELECT * FROM not_indexed UNION ALL SELECT * FROM approximate) found
ORDER BY distance
LIMIT %(k)s;

-- name: delete
DELETE FROM vector_index WHERE index_name = %(index)s AND id = ANY(%(ids)s);

-- name: count
SELECT count(*) AS n FROM vector_index
WHERE index_name = %(index)s AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s);
