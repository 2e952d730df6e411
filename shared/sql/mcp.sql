-- Reads of the MCP server's get_chunk and get_document tools. Only chunks of the document's
-- ready version are shown, as search shows them (`version <= ready_version`).

-- name: chunk_with_neighbours
SELECT n.id::text AS chunk_id, n.document_id, n.position, n.start_char, n.end_char, n.content AS text,
       n.id = c.id AS hit
FROM chunks c
JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
JOIN chunks n ON n.entity_id = c.entity_id AND n.document_id = c.document_id
             AND n.position BETWEEN c.position - %(neighbours)s AND c.position + %(neighbours)s
             AND n.version <= d.ready_version
WHERE c.entity_id = %(entity_id)s AND c.id = %(chunk_id)s AND c.version <= d.ready_version
ORDER BY n.position;

-- name: document_chunks
SELECT c.id::text AS chunk_id, c.position, c.start_char, c.end_char, c.content AS text
FROM chunks c
JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id
WHERE c.entity_id = %(entity_id)s AND c.document_id = %(document_id)s
  AND c.version <= d.ready_version AND c.position >= %(offset)s
ORDER BY c.position
LIMIT %(limit)s;
