-- A trajectory's grounding (shared/trajectories): what its chunks and documents hold now.

-- name: documents
-- The documents a trajectory touched, by (entity, id) pairs.
SELECT d.entity_id, d.id AS document_id, d.title, d.source, d.summary, d.status, d.updated_at
FROM unnest(%(entity_ids)s::text[], %(document_ids)s::text[]) AS t(entity_id, document_id)
JOIN documents d ON d.entity_id = t.entity_id AND d.id = t.document_id;

-- name: chunk_texts
-- The chunks a trajectory returned that still exist (a later version may have replaced some);
-- the entity list lets the planner read only their partitions.
SELECT c.id::text AS chunk_id, c.content AS text
FROM chunks c
WHERE c.entity_id = ANY(%(entity_ids)s::text[]) AND c.id = ANY(%(chunk_ids)s::uuid[]);
