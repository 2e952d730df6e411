-- Field vectors of index descriptors (issue 12, index selection).
--
-- Each field of a descriptor ("table.column", or a plain field name) is embedded on its own, and a
-- request is scored against them too: a question names the columns it needs ("population", "surface
-- area", "head of state") in words that rarely equal the column names, and near-duplicate schemas
-- differ in which of those columns they hold (shared/selection/field_vectors.py). The vectors of
-- one descriptor are kept as one float32 matrix (rows in the order of field_vectors.field_texts):
-- thousands of fields are read back in one value per descriptor, not parsed row by row. NULL (a
-- descriptor stored before this column, or a collection) scores by its own vector instead.
ALTER TABLE index_descriptors ADD COLUMN IF NOT EXISTS field_vectors bytea;
