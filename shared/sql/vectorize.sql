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
-- The nearest past queries of one scope, through semantic_cache_nearest (migration 0020). A scope
-- with fewer than %(exact_max)s entries (the usual case: one per entity set and parameters) is
-- searched exactly, through the (index_name, namespace) b-tree and a sort, by a statement the
-- function plans once per session (generic: it reads no value to choose its plan); a larger scope
-- walks the HNSW index (migrations 0012, 0016) for its indexed vectors and reads exactly those
-- stored while it was small, by a statement planned with its values at every call.
SELECT id, score, metadata
FROM semantic_cache_nearest(%(index)s, %(namespace)s, %(model)s, %(embedding)s, %(k)s, %(exact_max)s);

-- name: delete
DELETE FROM vector_index WHERE index_name = %(index)s AND id = ANY(%(ids)s);

-- name: count
SELECT count(*) AS n FROM vector_index
WHERE index_name = %(index)s AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s);
