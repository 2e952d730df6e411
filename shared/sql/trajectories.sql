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

-- name: expand_document
-- Chunks of the chosen chunk's document (its ready version) that the trajectory has not returned:
-- nearest positions first (neighbours) or in reading order (document).
SELECT n.id::text AS chunk_id, n.document_id, n.entity_id, n.position, n.start_char, n.end_char,
       n.content AS text, d.title, d.source, d.tags, d.summary,
       1.0 / (1 + abs(n.position - c.position)) AS score
FROM chunks c
JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
JOIN chunks n ON n.entity_id = c.entity_id AND n.document_id = c.document_id AND n.version <= d.ready_version
WHERE c.entity_id = %(entity_id)s AND c.id = %(chunk_id)s AND n.id <> ALL(%(seen)s::uuid[])
ORDER BY CASE WHEN %(nearest)s THEN abs(n.position - c.position) ELSE n.position END, n.position
LIMIT %(limit)s;

-- name: expand_similar
-- The chunks nearest the chosen chunk's vector in the given entities (exact distances: an expansion
-- reads one scope once), ready versions only, leaving out what the trajectory returned; a vector is
-- compared only with vectors of its own model (entities may be served by different ones).
SELECT n.id::text AS chunk_id, n.document_id, n.entity_id, n.position, n.start_char, n.end_char,
       n.content AS text, d.title, d.source, d.tags, d.summary,
       greatest(1 - (n.embedding <=> c.embedding), 0) AS score
FROM chunks c
JOIN chunks n ON n.entity_id = ANY(%(entity_ids)s::text[]) AND n.id <> c.id AND n.model_id = c.model_id
JOIN documents d ON d.entity_id = n.entity_id AND d.id = n.document_id AND n.version <= d.ready_version
WHERE c.entity_id = %(entity_id)s AND c.id = %(chunk_id)s AND n.id <> ALL(%(seen)s::uuid[])
ORDER BY n.embedding <=> c.embedding, n.entity_id, n.document_id, n.position
LIMIT %(limit)s;
