-- The semantic cache's HNSW index covers only the vectors of large scopes (issue 15).
--
-- A lookup walks the HNSW index only in a scope (index name + namespace) of at least 1,000 vectors
-- (EXACT_MAX in shared/bindings/vectorize.py); smaller scopes, the usual case, are searched
-- exactly through the (index_name, namespace) b-tree. Yet every pointer stored went into the
-- HNSW graph: 1-2 ms of Postgres CPU per uncached search (m 16, ef_construction 64, growing with
-- the table), against 0.2 ms for the row and its b-trees. A vector is now marked `indexed` when
-- its scope already holds EXACT_MAX vectors as it is stored (vectorize.sql "upsert"), and only
-- those are in the graph; a large scope's lookup walks the graph for its indexed vectors and
-- reads the rest (at most EXACT_MAX, stored while the scope was small) exactly, through a
-- partial b-tree of its own (the scope's b-tree would read every vector of the scope).
ALTER TABLE vector_index ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT false;
DROP INDEX IF EXISTS vector_index_embedding_hnsw;
UPDATE vector_index v SET indexed = true
FROM (SELECT index_name, namespace FROM vector_index GROUP BY 1, 2 HAVING count(*) >= 1000) big
WHERE v.index_name = big.index_name AND v.namespace = big.namespace;
CREATE INDEX IF NOT EXISTS vector_index_embedding_hnsw ON vector_index USING hnsw (embedding vector_cosine_ops)
WHERE indexed;
CREATE INDEX IF NOT EXISTS vector_index_not_indexed ON vector_index (index_name, namespace) WHERE NOT indexed;
