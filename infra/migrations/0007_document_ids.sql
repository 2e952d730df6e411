-- Document ids as real corpora have them: file paths (reports/2025/q3.pdf), URLs,
-- <dbpedia:Babylon_5:_Voices>, spaces, any script. Stored as given, up to 512 bytes of
-- UTF-8 without control characters (shared/validation.py says the same); object keys
-- and run ids carry an encoded form, never the raw id (shared/object_keys.py).
-- Entity ids keep their key-safe alphabet.
ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_id_check;
ALTER TABLE documents ADD CONSTRAINT documents_id_check
    CHECK (octet_length(id) BETWEEN 1 AND 512 AND id !~ '[[:cntrl:]]' AND btrim(id) <> '');

-- Pending uploads expire: the moment an upload URL stops working is kept, and a version
-- whose bytes never arrived by then (plus a grace period) is failed with that reason
-- instead of staying pending forever (shared/sql/documents.sql: expire_uploads).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS upload_expires_at timestamptz;
CREATE INDEX IF NOT EXISTS documents_pending_uploads ON documents (upload_expires_at)
    WHERE status = 'pending' AND uploaded_at IS NULL;
