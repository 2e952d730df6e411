-- Tool feedback moves its own catalogue version (issue 12, item 4).
--
-- `POST /tools/feedback` used to bump the 'tools' version, so the next select rebuilt the whole
-- catalogue (every vector, the BM25 fields) for a change to a few counts and one example. It now
-- bumps 'tools.feedback', which a search worker answers by re-reading the feedback counts and the
-- learned examples of the tools whose counts moved (selection/tools.py refresh_learned).
ALTER TABLE catalog_versions DROP CONSTRAINT IF EXISTS catalog_versions_kind_check;
ALTER TABLE catalog_versions ADD CONSTRAINT catalog_versions_kind_check
    CHECK (kind IN ('tools', 'tools.feedback', 'indices'));
