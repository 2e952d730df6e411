-- Searches keep their speed while documents keep arriving (issue 15).
--
-- A GIN index with `fastupdate` (Postgres's default) takes new entries into a pending list that
-- every scan of the index reads whole, until a vacuum, an analyze or an insert past
-- gin_pending_list_limit (4 MB) merges it. The search statement scans the chunks' full-text index on every search
-- (shared/sql/search.sql, `lexical_candidates`), so between autovacuums a tenant that keeps
-- writing makes its searches slower: on 12,000 chunks, with 1,500 new chunks pending a search takes
-- 1.12-1.17x the time of the same search in a tenant whose writes left nothing pending, with 4,000
-- 1.42-1.48x (~7,000 fit under the limit). The same holds for the vocabulary's
-- trigram index, which a search reads for every query word no chunk holds (a typo's stand-ins), and
-- which the chunk writes' new terms fill (~4 entries per chunk). With `fastupdate` off each write
-- puts its entries in place: a search never reads a pending list, and the write pays for its own.
--
-- The trigram index over whole chunk contents goes: no statement uses it (fuzzy matching reads
-- the vocabulary's terms, migration 0003: `term_stats_trgm_idx`), and it is the most
-- expensive index a chunk write keeps (every trigram of the chunk's text).
DO $$
DECLARE
    part text;
BEGIN
    -- a partitioned index has no storage of its own: each partition's index is set
    FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent IN ('chunks_tsv_idx'::regclass, 'term_stats_trgm_idx'::regclass)
                ORDER BY c.relname LOOP
        EXECUTE format('ALTER INDEX %I SET (fastupdate = off)', part);
        -- what is pending now is merged now, not left for searches to read until a vacuum
        PERFORM gin_clean_pending_list(part::regclass);
    END LOOP;
END $$;
DROP INDEX IF EXISTS chunks_trgm_idx;
