-- The semantic cache's vectors get an HNSW index (issue 15).
--
-- A semantic lookup asks for the nearest past queries of one scope (index name + namespace).
-- Without a vector index Postgres reads every vector of the namespace and sorts them: fine for
-- a scope that has seen a few queries, tens of ms for one an agent has searched thousands of
-- times. The lookup (shared/sql/vectorize.sql "query") searches a small namespace exactly through
-- the (index_name, namespace) b-tree, and walks this index (iterative scan, filtered by namespace)
-- once the namespace is large. It runs before any search statement, so a hit costs the query
-- embedding and this lookup.
CREATE INDEX IF NOT EXISTS vector_index_embedding_hnsw ON vector_index USING hnsw (embedding vector_cosine_ops);
