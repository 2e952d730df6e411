-- Documents as the upload worker sees them: upload requests, status, deletion.

-- name: create_or_bump
-- A new document starts at version 1; an upload to an existing id is its next version.
-- Omitted fields (NULL) keep their current value; the previous version stays live
-- (ready_version, chunks) until the new one is ready.
INSERT INTO documents (entity_id, id, version, title, source, content_type, tags, metadata, object_key,
                       size_bytes, filename, status, upload_id, collection)
VALUES (%(entity_id)s, %(document_id)s, 1, coalesce(%(title)s, ''), coalesce(%(source)s, 'upload'),
        %(content_type)s, coalesce(%(tags)s, '{}'::text[]), coalesce(%(metadata)s, '{}'::jsonb), '',
        %(size_bytes)s, %(filename)s, 'pending', NULL, %(collection)s)
ON CONFLICT (entity_id, id) DO UPDATE
SET version = documents.version + 1,
    title = coalesce(%(title)s, documents.title),
    source = coalesce(%(source)s, documents.source),
    tags = coalesce(%(tags)s, documents.tags),
    metadata = coalesce(%(metadata)s, documents.metadata),
    collection = coalesce(%(collection)s, documents.collection),
    content_type = EXCLUDED.content_type,
    size_bytes = EXCLUDED.size_bytes,
    filename = EXCLUDED.filename,
    status = 'pending', step = NULL, error = NULL,
    upload_id = NULL, uploaded_at = NULL, run_id = NULL
RETURNING version, generation;

-- name: set_object
UPDATE documents SET object_key = %(object_key)s, upload_id = %(upload_id)s,
                     upload_expires_at = now() + make_interval(secs => %(expires)s)
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND version = %(version)s;

-- name: mark_upload_failed
UPDATE documents SET status = 'failed', step = 'upload', error = %(error)s
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND version = %(version)s AND status = 'pending';

-- name: pending_upload
SELECT version, generation, status, object_key, upload_id, content_type, size_bytes, uploaded_at
FROM documents WHERE entity_id = %(entity_id)s AND id = %(document_id)s;

-- name: live_version
SELECT version, ready_version, status, content_hash, content_type, title, source, tags, collection
FROM documents WHERE entity_id = %(entity_id)s AND id = %(document_id)s FOR UPDATE;

-- name: update_fields
UPDATE documents
SET title = coalesce(%(title)s, title), source = coalesce(%(source)s, source), tags = coalesce(%(tags)s, tags),
    collection = coalesce(%(collection)s, collection), updated_at = now()
WHERE entity_id = %(entity_id)s AND id = %(document_id)s;

-- name: lock_document
SELECT version FROM documents WHERE entity_id = %(entity_id)s AND id = %(document_id)s FOR UPDATE;

-- name: get_document
SELECT d.id AS document_id, d.entity_id, d.version, d.ready_version, d.status,
       CASE WHEN d.status = 'processing' THEN coalesce(r.current_step, d.step) ELSE d.step END AS step,
       CASE WHEN d.status = 'pending' AND d.uploaded_at IS NULL THEN 'upload'
            WHEN d.status = 'pending' THEN 'ingestion (queued)'
            WHEN d.status = 'processing' THEN 'ingestion step ' || coalesce(r.current_step, d.step, 'extract')
       END AS waiting_for,
       CASE WHEN d.status = 'pending' AND d.uploaded_at IS NULL THEN d.upload_expires_at END AS upload_expires_at,
       d.error, d.title, d.source, d.tags, d.collection, d.metadata, d.content_type, d.size_bytes, d.filename,
       d.chunk_count, d.chunks_embedded, d.chunks_reused, d.summary, d.created_at, d.updated_at,
       d.object_warning
FROM documents d
LEFT JOIN workflow_runs r ON r.id = d.run_id
WHERE d.entity_id = %(entity_id)s AND d.id = %(document_id)s;

-- name: list_documents
SELECT d.id AS document_id, d.entity_id, d.version, d.ready_version, d.status,
       CASE WHEN d.status = 'processing' THEN coalesce(r.current_step, d.step) ELSE d.step END AS step,
       d.error, d.title, d.source, d.tags, d.collection, d.content_type, d.size_bytes, d.chunk_count,
       d.chunks_embedded, d.chunks_reused, d.created_at, d.updated_at
FROM documents d
LEFT JOIN workflow_runs r ON r.id = d.run_id
WHERE d.entity_id = %(entity_id)s
  AND (%(status)s::text IS NULL OR d.status = %(status)s)
  AND (%(after)s::text IS NULL OR d.id > %(after)s)
ORDER BY d.id
LIMIT %(limit)s;

-- name: chunk_ids
SELECT id::text AS id FROM chunks WHERE entity_id = %(entity_id)s AND document_id = %(document_id)s;

-- name: delete_document
-- Chunks go with it (ON DELETE CASCADE).
DELETE FROM documents WHERE entity_id = %(entity_id)s AND id = %(document_id)s
RETURNING generation, upload_id, object_key, chunk_count;

-- name: delete_runs
-- Every workflow run of a document (their checkpoints cascade).
DELETE FROM workflow_runs WHERE starts_with(id, %(prefix)s);

-- name: expire_uploads
-- Versions whose bytes never arrived before their upload URL expired (plus a grace period):
-- failed with the reason, never pending forever. The previous version, if any, stays live.
WITH expired AS (
    SELECT entity_id, id, upload_id FROM documents
    WHERE status = 'pending' AND uploaded_at IS NULL
      AND upload_expires_at < now() - make_interval(secs => %(grace)s)
    FOR UPDATE SKIP LOCKED
)
UPDATE documents d
SET status = 'failed', step = 'upload', upload_id = NULL,
    error = 'the upload never arrived: its URL expired at '
            || to_char(d.upload_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM expired e
WHERE d.entity_id = e.entity_id AND d.id = e.id
RETURNING d.entity_id, d.id AS document_id, d.version, d.object_key, e.upload_id;

-- name: confirm_upload
-- The bytes of this version of this life of the document are stored. No row when a DELETE or a newer
-- upload got in first: the caller then removes what it stored and says so (never a 202 for bytes that
-- will not be ingested). Any status: ingestion may already have started (or ended) from the event.
UPDATE documents SET uploaded_at = coalesce(uploaded_at, now()),
                     upload_id = CASE WHEN status = 'pending' THEN NULL ELSE upload_id END
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND version = %(version)s
  AND generation = %(generation)s::uuid
RETURNING version;

