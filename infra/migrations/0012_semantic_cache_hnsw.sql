-- The semantic cache's vectors get an HNSW index (issue 15).
--
-- A semantic lookup asks for the nearest past queries of one scope (index name + namespace).
-- Without a vector index Postgres reads every vector of the namespace and sorts them: fine for
-- a scope that has seen a few queries, ~tens of ms for one an agent has searched thousands of
-- times. With HNSW the planner picks per lookup: the (index_name, namespace) b-tree and a sort
-- when the namespace is small, the graph walk (iterative scan, filtered by namespace) when it is
-- large. The lookup runs before any search statement, so a hit costs the embedding and this.
CREATE INDEX IF NOT EXISTS vector_index_embedding_hnsw ON vector_index USING hnsw (embedding vector_cosine_ops);
