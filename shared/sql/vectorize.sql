-- name: upsert
INSERT INTO vector_index (index_name, namespace, id, model_id, embedding, metadata)
VALUES (%(index)s, %(namespace)s, %(id)s, %(model)s, %(embedding)s, %(metadata)s)
ON CONFLICT (index_name, id) DO UPDATE
SET namespace = EXCLUDED.namespace, model_id = EXCLUDED.model_id,
    embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata, created_at = now();

-- name: query
-- Through the HNSW index (migration 0012) when the namespace is large: an iterative scan may
-- return neighbours slightly out of order (hnsw.iterative_scan = relaxed_order), so the few
-- found are sorted again.
WITH nearest AS MATERIALIZED (
    SELECT id, embedding <=> %(embedding)s AS distance, metadata
    FROM vector_index
    WHERE index_name = %(index)s AND namespace = %(namespace)s AND model_id = %(model)s
    ORDER BY embedding <=> %(embedding)s
    LIMIT %(k)s
)
SELECT id, 1 - distance AS score, metadata FROM nearest ORDER BY distance;

-- name: delete
DELETE FROM vector_index WHERE index_name = %(index)s AND id = ANY(%(ids)s);

-- name: count
SELECT count(*) AS n FROM vector_index
WHERE index_name = %(index)s AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s);
