-- Field vectors of collections (issue 12, index selection).
--
-- A collection's fields (the JSON field paths of its documents) are embedded one by one like an external
-- descriptor's (0017), but its profile is rewritten as documents come and go: `field_hash` says which
-- model and field texts the stored matrix was made from, so a profile whose fields did not change keeps
-- its vectors and one that gained a field embeds that field only (shared/selection/collections.py).
-- `fields_embedded_at`: when a field of it was last embedded (NULL: never).
ALTER TABLE index_descriptors ADD COLUMN IF NOT EXISTS field_hash text;
ALTER TABLE index_descriptors ADD COLUMN IF NOT EXISTS fields_embedded_at timestamptz;

-- Every existing collection is recomputed once by the ingest worker's refresher, which now gives it
-- field vectors (the profile's hash includes how field texts are made).
INSERT INTO collection_changes (entity_id, name)
SELECT entity_id, name FROM collections
ON CONFLICT (entity_id, name) DO NOTHING;
