-- edgeindex schema, version 2: what durable ingestion needs beside the documents table.

-- A document id can be deleted and used again; versions then restart at 1. The
-- generation tells the two lives apart, so a run (or a late queue message) of a
-- deleted document can never write into its successor.
ALTER TABLE documents ADD COLUMN generation uuid NOT NULL DEFAULT gen_random_uuid();

-- Name of the uploaded file (sanitized; the last part of the object key).
ALTER TABLE documents ADD COLUMN filename text NOT NULL DEFAULT '';

-- Multipart upload in progress for the current version (checked by the complete call).
ALTER TABLE documents ADD COLUMN upload_id text;

-- Set once the current version's object is known to exist (direct upload, multipart
-- complete, or its object-created event reached the ingest worker). A presigned PUT
-- that never happened leaves it NULL: recovery must not call such an upload lost.
ALTER TABLE documents ADD COLUMN uploaded_at timestamptz;

-- The workflow run ingesting the current version; the status route reads its current step.
ALTER TABLE documents ADD COLUMN run_id text;

-- Recovery looks for unfinished documents only.
CREATE INDEX documents_unfinished_idx ON documents (status) WHERE status IN ('pending', 'processing');
