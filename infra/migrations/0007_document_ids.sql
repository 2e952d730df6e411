-- Document ids as real corpora have them: file paths (reports/2025/q3.pdf), URLs,
-- <dbpedia:Babylon_5:_Voices>, spaces, any script. Stored as given, up to 512 bytes of
-- UTF-8 without control characters (shared/validation.py says the same); object keys
-- and run ids carry an encoded form, never the raw id (shared/object_keys.py).
-- Entity ids keep their key-safe alphabet.
ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_id_check;
ALTER TABLE documents ADD CONSTRAINT documents_id_check
    CHECK (octet_length(id) BETWEEN 1 AND 512 AND id !~ '[[:cntrl:]]' AND btrim(id) <> '');
