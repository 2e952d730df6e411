-- The semantic cache's lookup as a function whose common case runs a plan made once (issue 15).
--
-- As a plain statement (shared/sql/vectorize.sql "query") the lookup is planned at every call: the pool's
-- connections plan custom (bindings/database.py), and each call names a scope (namespace) of its own.
-- Its planning is ~0.42 ms of Postgres per request against ~0.05 ms of execution (pg_stat_statements
-- at 8 agents). The usual scope holds fewer than `exact_max` vectors and is
-- searched exactly, through the (index_name, namespace) b-tree and a sort ("+ 0" keeps the planner
-- off the HNSW index): a plan that reads no value to choose (tests/integration/test_semantic_lookup.py
-- compares it with the custom plan). So this function plans its two small statements once per
-- session (`plan_cache_mode` generic for the function's own statements only; the caller's connection
-- keeps custom plans), and a large scope runs the statement it always ran, planned with its values
-- (EXECUTE ... USING: a one-shot plan, always custom), so it still walks the HNSW index for its
-- indexed vectors and reads those stored while it was small exactly (migration 0016).
CREATE OR REPLACE FUNCTION semantic_cache_nearest(p_index text, p_namespace text, p_model text,
                                                  p_embedding vector, p_k integer, p_exact_max integer)
RETURNS TABLE (id text, score double precision, metadata jsonb)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    IF (SELECT count(*) FROM (
            SELECT 1 FROM vector_index v
            WHERE v.index_name = p_index AND v.namespace = p_namespace
            LIMIT p_exact_max) few) < p_exact_max THEN
        RETURN QUERY
            SELECT v.id, 1 - (v.embedding <=> p_embedding), v.metadata
            FROM vector_index v
            WHERE v.index_name = p_index AND v.namespace = p_namespace AND v.model_id = p_model
            ORDER BY (v.embedding <=> p_embedding) + 0
            LIMIT p_k;
        RETURN;
    END IF;
    -- a large scope: its indexed vectors through the HNSW index, the others (at most exact_max,
    -- stored while it was small) through their partial b-tree; an iterative scan may return
    -- neighbours slightly out of order (hnsw.iterative_scan = relaxed_order), so all is sorted again
    RETURN QUERY EXECUTE $q$
        WITH not_indexed AS MATERIALIZED (
            SELECT v.id, v.embedding <=> $4 AS distance, v.metadata
            FROM vector_index v
            WHERE NOT v.indexed AND v.index_name = $1 AND v.namespace = $2 AND v.model_id = $3
            ORDER BY (v.embedding <=> $4) + 0
            LIMIT $5
        ),
        approximate AS MATERIALIZED (
            SELECT v.id, v.embedding <=> $4 AS distance, v.metadata
            FROM vector_index v
            WHERE v.indexed AND v.index_name = $1 AND v.namespace = $2 AND v.model_id = $3
            ORDER BY v.embedding <=> $4
            LIMIT $5
        )
        SELECT found.id, 1 - found.distance, found.metadata
        FROM (SELECT * FROM not_indexed UNION ALL SELECT * FROM approximate) found
        ORDER BY found.distance
        LIMIT $5 $q$
        USING p_index, p_namespace, p_model, p_embedding, p_k;
END
$fn$;
