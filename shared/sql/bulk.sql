-- Bulk upload (shared/uploads/bulk.py).

-- name: live_versions
-- The documents a bulk request names, read once: lines whose bytes the ready version has already
-- are answered from this without a transaction each.
SELECT id AS document_id, version, ready_version, status, content_hash, content_type, title, source, tags
FROM documents WHERE entity_id = %(entity_id)s AND id = ANY(%(document_ids)s);
