-- What a trajectory step needs of each candidate chunk, computed once at ingestion instead of at
-- every step that looks at it (shared/copies.py, shared/token_count.py):
--   copy_fingerprint  the text's exact fingerprint (equal up to case, spacing and punctuation)
--   copy_simhash      its 256-bit SimHash (32 bytes); NULL for a text too short to compare
--   context_tokens    its length in tokens as an LLM context counts them (cl100k)
-- A chunk written before this migration (or by a loader that leaves them out) has NULL
-- copy_fingerprint and context_tokens, and a step computes them from the text.
ALTER TABLE chunks
    ADD COLUMN copy_fingerprint text,
    ADD COLUMN copy_simhash bytea CHECK (octet_length(copy_simhash) = 32),
    ADD COLUMN context_tokens integer CHECK (context_tokens >= 0);
