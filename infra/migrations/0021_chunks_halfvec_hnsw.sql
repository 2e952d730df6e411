-- The chunks' HNSW index over half-precision copies of their vectors (issue 15).
--
-- The HNSW walk is ~half of an uncached search's Postgres time: ~1,500 buffer reads of 1.5 KB vectors and as many 384-d distances. Over
-- `halfvec` the graph's vectors take half the pages and pgvector computes the distances in half
-- precision. The walk only picks the candidates: the search statement (shared/sql/search.sql, CTE
-- `scored`) scores every candidate on the full-precision `embedding`, which stays the column.
-- The index is an expression index: a search must order by this very expression, dimension
-- included (shared/search/engine.py writes it in). It replaces the full-precision index, which
-- nothing else walks, so ingestion still maintains one graph.
-- Built per partition and attached, so that each partition's index is named for what it is
-- (chunks_p6_embedding_half_idx, not Postgres's chunks_p6_expr_idx) in plans and tests.
CREATE INDEX IF NOT EXISTS chunks_embedding_half_idx ON ONLY chunks
USING hnsw ((embedding::halfvec({{dimension}})) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64);
DO $$
DECLARE
    part text;
BEGIN
    FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'chunks'::regclass ORDER BY c.relname LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw ((embedding::halfvec({{dimension}})) '
                       'halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)', part || '_embedding_half_idx', part);
        EXECUTE format('ALTER INDEX chunks_embedding_half_idx ATTACH PARTITION %I', part || '_embedding_half_idx');
    END LOOP;
END $$;
DROP INDEX IF EXISTS chunks_embedding_idx;
