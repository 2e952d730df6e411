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

-- name: entity_model_vectors
-- Every live chunk's vector of another model (`edgeindex models backfill`), of the chunk's current text.
SELECT c.id::text AS chunk_id, c.document_id, v.embedding
FROM chunk_vectors v
JOIN chunks c ON c.entity_id = v.entity_id AND c.id = v.chunk_id AND c.content_hash = v.content_hash
JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
WHERE v.model_id = %(model_id)s AND v.entity_id = %(entity_id)s
  AND d.status = 'ready'
ORDER BY c.document_id, c.position;
