-- Tool feedback moves its own catalogue version (issue 12, item 4).
--
-- Bumping the 'tools' version on `POST /tools/feedback` would make the next select rebuild the whole
-- catalogue (every vector, the BM25 fields) for a change to a few counts and one example. Feedback
-- bumps 'tools.feedback' instead, which a search worker answers by re-reading the feedback counts and the
-- learned examples of the tools whose counts moved (selection/tools.py refresh_learned).
ALTER TABLE catalog_versions DROP CONSTRAINT IF EXISTS catalog_versions_kind_check;
ALTER TABLE catalog_versions ADD CONSTRAINT catalog_versions_kind_check
    CHECK (kind IN ('tools', 'tools.feedback', 'indices'));
