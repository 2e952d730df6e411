-- Documents and chunks as the ingest worker sees them.

-- name: document_for_event
SELECT version, generation::text AS generation, status, ready_version, content_hash, content_type, object_key,
       title, run_id, size_bytes, object_etag, object_warning
FROM documents WHERE entity_id = %(entity_id)s AND id = %(document_id)s;

-- name: start_processing
UPDATE documents
SET status = 'processing', run_id = %(run_id)s, uploaded_at = coalesce(uploaded_at, now()), step = NULL, error = NULL
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND version = %(version)s
  AND generation = %(generation)s::uuid AND status IN ('pending', 'processing')
RETURNING version;

-- name: stored_chunks
SELECT id::text AS id, position, start_char, end_char, content_hash, model_id
FROM chunks WHERE entity_id = %(entity_id)s AND document_id = %(document_id)s;

-- name: lock_document
SELECT version, generation::text AS generation, ready_version, content_hash FROM documents
WHERE entity_id = %(entity_id)s AND id = %(document_id)s
FOR UPDATE;

-- name: chunk_ids
SELECT id::text AS id FROM chunks WHERE entity_id = %(entity_id)s AND document_id = %(document_id)s;

-- name: move_chunk
-- A reused chunk whose place changed: new position and offsets, same row and vector.
UPDATE chunks SET position = %(position)s, start_char = %(start)s, end_char = %(end)s
WHERE entity_id = %(entity_id)s AND id = %(id)s::uuid;

-- name: delete_other_chunks
-- Every chunk of the document that the new version does not keep (stale ones).
DELETE FROM chunks
WHERE entity_id = %(entity_id)s AND document_id = %(document_id)s AND NOT (id = ANY(%(keep)s::uuid[]));

-- name: finish_document
UPDATE documents
SET status = 'ready', step = NULL, error = NULL, ready_version = version, upload_id = NULL,
    chunk_count = %(chunk_count)s, chunks_embedded = %(embedded)s, chunks_reused = %(reused)s,
    summary = %(summary)s, content_hash = %(content_hash)s, size_bytes = %(size_bytes)s,
    object_etag = %(etag)s, object_warning = NULL,
    title = CASE WHEN title = '' THEN %(found_title)s ELSE title END,
    updated_at = now()
WHERE entity_id = %(entity_id)s AND id = %(document_id)s;

-- name: reuse_live_version
-- Identical bytes uploaded again: the live chunks now stand for this version.
UPDATE documents
SET status = 'ready', step = NULL, error = NULL, ready_version = version, upload_id = NULL,
    chunks_embedded = 0, chunks_reused = chunk_count, size_bytes = %(size_bytes)s, updated_at = now(),
    object_etag = %(etag)s, object_warning = NULL
WHERE entity_id = %(entity_id)s AND id = %(document_id)s;

-- name: fail_document
-- Only the version (and generation) the failure belongs to; the step is where the run stopped.
UPDATE documents d
SET status = 'failed', error = %(error)s,
    step = coalesce((SELECT r.current_step FROM workflow_runs r WHERE r.id = d.run_id), d.step)
WHERE d.entity_id = %(entity_id)s AND d.id = %(document_id)s AND d.version = %(version)s
  AND d.generation = %(generation)s::uuid AND d.status IN ('pending', 'processing')
RETURNING d.step;

-- name: delete_old_runs
-- Runs of earlier versions of the document that are no longer running.
DELETE FROM workflow_runs
WHERE starts_with(id, %(prefix)s) AND id <> %(run_id)s AND status <> 'running';

-- name: unfinished_documents
SELECT entity_id, id AS document_id, version, status, object_key, uploaded_at, run_id
FROM documents WHERE status IN ('pending', 'processing')
ORDER BY entity_id, id;

-- name: mark_lost
UPDATE documents SET status = 'failed', step = 'upload', error = %(error)s
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND version = %(version)s
  AND status IN ('pending', 'processing');

-- name: run_object_key
SELECT params->>'object_key' AS object_key FROM workflow_runs WHERE id = %(run_id)s;

-- name: run_steps
SELECT name, seq, attempts, completed_at FROM workflow_steps WHERE run_id = %(run_id)s ORDER BY seq;

-- name: unfinished_runs
-- Documents being processed, and ready ones whose run stopped between its commit and its clean-up.
SELECT d.entity_id, d.id AS document_id, d.version, d.object_key
FROM documents d
WHERE d.status = 'processing'
   OR (d.status = 'ready' AND EXISTS (SELECT 1 FROM workflow_runs r WHERE r.id = d.run_id AND r.status = 'running'));

-- name: run_invocations
SELECT attempts FROM workflow_runs WHERE id = %(run_id)s;

-- name: note_changed_object
-- The object behind the ready version is no longer what was ingested: said on the document (status
-- stays ready, the index keeps what was checked at upload) until a new version is ready.
UPDATE documents SET object_warning = %(warning)s
WHERE entity_id = %(entity_id)s AND id = %(document_id)s AND ready_version = %(version)s
  AND generation = %(generation)s::uuid;

-- name: entity_model
-- The model serving one entity's chunks: its own (models.sql, serve_entities), else the deployment's.
SELECT coalesce(e.model_id, m.model_id) AS model_id
FROM embedding_model m LEFT JOIN entity_models e ON e.entity_id = %(entity_id)s;
