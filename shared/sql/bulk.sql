-- Bulk upload (shared/uploads/bulk.py).

-- name: live_versions
-- The documents a bulk request names, read once: lines whose bytes the ready version has already
-- are answered from this without a transaction each.
SELECT id AS document_id, version, ready_version, status, content_hash, content_type, title, source, tags
FROM documents WHERE entity_id = %(entity_id)s AND id = ANY(%(document_ids)s);

-- name: set_objects
-- The object key of every new version a bulk request created (shared/uploads/bulk_versions.py), in one
-- statement: a direct upload's set_object for each, with no upload URL to expire.
UPDATE documents d SET object_key = v.object_key, upload_id = NULL, upload_expires_at = NULL
FROM unnest(%(document_ids)s::text[], %(versions)s::integer[], %(object_keys)s::text[]) AS v(id, version, object_key)
WHERE d.entity_id = %(entity_id)s AND d.id = v.id AND d.version = v.version;

-- name: confirm_uploads
-- confirm_upload (documents.sql) for every version a bulk request stored, with the status its answer shows.
-- A version a DELETE or a newer upload got in first has no row here: the caller removes its bytes and
-- says so for that line alone.
UPDATE documents d SET uploaded_at = coalesce(d.uploaded_at, now()),
                       upload_id = CASE WHEN d.status = 'pending' THEN NULL ELSE d.upload_id END
FROM unnest(%(document_ids)s::text[], %(versions)s::integer[], %(generations)s::uuid[]) AS v(id, version, generation)
WHERE d.entity_id = %(entity_id)s AND d.id = v.id AND d.version = v.version AND d.generation = v.generation
RETURNING d.id AS document_id, d.version, d.status;
