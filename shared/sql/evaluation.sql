-- Read-only queries of the evaluation harness (edgeindex eval).

-- name: entity_chunk_vectors
-- Every live chunk vector of one entity, so a baseline can index the very same
-- vectors the search route ranks.
SELECT c.id::text AS chunk_id, c.document_id, c.model_id, c.embedding
FROM chunks c
JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
WHERE c.entity_id = %(entity_id)s
  AND d.status = 'ready'
ORDER BY c.document_id, c.position;
