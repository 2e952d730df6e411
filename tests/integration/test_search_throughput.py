"""What makes searches cheap under concurrency, on the real stack: a semantic hit answers before
any search statement runs, the semantic lookup walks the HNSW index (migration 0012) when a scope
has many past queries, and concurrent queries are embedded together with the same vectors."""

from __future__ import annotations

import asyncio

import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.vectorize import EXACT_MAX, UPSERT, PgVectorIndex
from edgeindex.evaluation.explain import executed_index_scans

from ..helpers import new_tenant, put_document, wait_document, wait_for

TEXT = ("To bake sourdough bread, feed the starter the night before, mix flour, water and salt, and let the "
        "dough rise slowly in a cool kitchen.")


async def _remembered(db, query: str) -> bool:
    # a query text no other test asks (this looks in every scope)
    row = await db.fetchone("SELECT count(*) AS n FROM vector_index WHERE index_name = 'query-cache' "
                            "AND metadata->>'query' = %(q)s", {"q": query})
    return row["n"] > 0


async def test_a_semantic_hit_runs_no_search_statement(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="tp")
    put_document(tenant, "bread", TEXT)
    assert (await wait_document(tenant, "bread"))["status"] == "ready"
    # a fixed strategy: on a miss both halves run in one statement once the lookup missed
    status, first = tenant.search.post("/search", {"query": "how do i bake sourdough at home",
                                                   "strategy": "hybrid"})
    assert status == 200 and first["cache"] == "none", first
    # the store comes after the answer (service.store): not among the answer's timings
    assert set(first["timings"]) == {"embed_ms", "semantic_lookup_ms", "search_ms"}
    await wait_for(lambda: _remembered(db, "how do i bake sourdough at home"), timeout=10)
    status, hit = tenant.search.post("/search", {"query": "how to bake sourdough at home", "strategy": "hybrid"})
    assert status == 200 and hit["cache"] == "semantic", hit
    assert hit["results"] == first["results"]
    # the hit is the embedding and the lookup: neither search statement was started
    assert set(hit["timings"]) == {"embed_ms", "semantic_lookup_ms"}


async def test_a_semantic_hit_on_a_pointer_this_process_stored_needs_no_lookup_statement(stack, upload_admin, db):
    """The search worker searches the pointers it stored itself first (search/local_semantic_cache.py): with
    the pointer deleted from Postgres, the paraphrase is still a hit. The pointer only names an answer,
    served by the exact cache's rule: once the document changes, the same paraphrase is a miss."""
    tenant = new_tenant(stack, upload_admin, prefix="tp")
    put_document(tenant, "bread", TEXT)
    assert (await wait_document(tenant, "bread"))["status"] == "ready"
    query = "how long should sourdough dough rise in a cool kitchen"
    status, first = tenant.search.post("/search", {"query": query, "strategy": "hybrid"})
    assert status == 200 and first["cache"] == "none", first
    await wait_for(lambda: _remembered(db, query), timeout=10)
    deleted = await db.execute("DELETE FROM vector_index WHERE index_name = 'query-cache' "
                               "AND metadata->>'query' = %(q)s", {"q": query})
    assert deleted == 1
    paraphrase = {"query": "how long should sourdough dough rise in a cool kitchen please", "strategy": "hybrid"}
    status, hit = tenant.search.post("/search", paraphrase)
    assert status == 200 and hit["cache"] == "semantic", hit
    assert hit["results"] == first["results"]

    put_document(tenant, "bread", TEXT.replace("cool kitchen", "warm oven"))
    assert (await wait_document(tenant, "bread", version=2))["status"] == "ready"
    status, after = tenant.search.post("/search", paraphrase)
    assert status == 200 and after["cache"] == "none", after
    assert "warm oven" in after["results"][0]["text"]


async def test_an_auto_semantic_hit_runs_no_search_statement(stack, upload_admin, db):
    """With no strategy named (the router decides, "auto"), the lookup still comes first: the
    semantic cache is keyed on "auto" and the model version, not on the per-query decision."""
    tenant = new_tenant(stack, upload_admin, prefix="tp")
    put_document(tenant, "bread", TEXT)
    assert (await wait_document(tenant, "bread"))["status"] == "ready"
    status, first = tenant.search.post("/search", {"query": "when should i feed my sourdough starter"})
    assert status == 200 and first["cache"] == "none", first
    assert first["routing"]["requested"] is None and first["routing"]["strategy"] != "auto"
    # the decision needs the lexical evidence: on a miss the halves run apart, after the lookup
    assert list(first["timings"])[:2] == ["embed_ms", "semantic_lookup_ms"]
    assert {"lexical_ms", "route_ms", "hybrid_ms"} <= set(first["timings"])
    await wait_for(lambda: _remembered(db, "when should i feed my sourdough starter"), timeout=10)
    status, hit = tenant.search.post("/search", {"query": "when should i feed the sourdough starter"})
    assert status == 200 and hit["cache"] == "semantic", hit
    assert hit["results"] == first["results"] and hit["routing"] == first["routing"]
    assert set(hit["timings"]) == {"embed_ms", "semantic_lookup_ms"}


async def test_semantic_lookup_uses_the_hnsw_index_for_a_large_scope(db):
    index = PgVectorIndex(db, "hnsw-test", model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    async with db.connection() as conn:
        async with conn.cursor() as cur:
            # through the binding's own statement: the big scope's first EXACT_MAX vectors stay out
            # of the HNSW graph, the rest go in (migration 0016)
            await cur.executemany(UPSERT, [index.upsert_params(f"q{i}", v, namespace="big" if i else "small")
                                           for i, v in enumerate(vectors)])
        await conn.commit()
        await conn.execute("ANALYZE vector_index")
        await conn.commit()
    try:
        from edgeindex import sqlfiles

        sql = sqlfiles.load("vectorize.sql")["query"]
        plans, texts = {}, {}
        for namespace in ("big", "small"):
            # Which index the planner picks for 2,000 rows depends on the statistics of the whole shared
            # table (other tests' cache entries); with sorting priced out, the plan shows what the query
            # shape allows: the big scope's branch can walk the HNSW index, the small one's never can ("+ 0").
            # The lookup is a function (migration 0020): its statements' plans come from auto_explain.
            notices: list[str] = []
            async with db.transaction() as conn:
                conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))  # noqa: B023
                for setting in ("LOAD 'auto_explain'", "SET LOCAL auto_explain.log_min_duration = 0",
                                "SET LOCAL auto_explain.log_analyze = on",
                                "SET LOCAL auto_explain.log_nested_statements = on",
                                "SET LOCAL client_min_messages = log", "SET LOCAL enable_sort = off"):
                    await conn.execute(setting)
                await conn.execute(sql, {
                    "index": "hnsw-test", "namespace": namespace, "model": index.model_id, "embedding": vectors[5],
                    "k": 3, "exact_max": EXACT_MAX})
                conn._notice_handlers.clear()
            texts[namespace] = "\n".join(notices).splitlines()
            plans[namespace] = executed_index_scans(texts[namespace])
        assert "vector_index_embedding_hnsw" in plans["big"], "\n".join(texts["big"])
        assert "vector_index_embedding_hnsw" not in plans["small"]  # one vector: the b-tree and a sort
        # the nearest is found either way, best first: stored while the scope was small (read
        # exactly) or since (in the graph)
        assert EXACT_MAX < 1500 < len(vectors)
        for nearest in (5, 1500):
            found = await index.query(vectors[nearest], namespace="big", top_k=3)
            assert found[0].id == f"q{nearest}" and found[0].score > 0.999
            assert len(found) == 3 and [m.score for m in found] == sorted((m.score for m in found), reverse=True)
        assert [m.id for m in await index.query(vectors[0], namespace="small", top_k=3)] == ["q0"]
    finally:
        await db.execute("DELETE FROM vector_index WHERE index_name = 'hnsw-test'")


async def test_concurrent_queries_share_a_model_call_and_keep_their_vectors(tmp_path):
    embedder = local_embedder()
    embedder.prepare_queries(cache=tmp_path)  # this process's embedder: a no-op if already prepared
    texts = ["how do we rotate the oncall schedule", "sourdough", "ZX-4471-QK certificate rotation failed",
             "quarterly revenue grew 12% while operating costs fell", "pager escalation policy", "a", "b c d e"]
    alone = np.stack([embedder.encode_query_sync(t) for t in texts])
    calls_before = embedder.query_batcher.batches
    together = np.stack(await asyncio.gather(*(embedder.embed_query(t) for t in texts)))
    assert embedder.query_batcher.batches - calls_before < len(texts)  # some shared a call
    assert np.abs(together - alone).max() < 1e-5


async def test_only_a_large_scopes_new_vectors_go_into_the_hnsw_graph(db):
    """Storing a pointer in a small scope (the usual case) costs no HNSW insert: the graph holds a
    scope's vectors only from its EXACT_MAX-th on, the only ones a lookup walks it for."""
    index = PgVectorIndex(db, "graph-test", model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(EXACT_MAX + 5, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    try:
        async with db.transaction() as conn:
            async with conn.cursor() as cur:
                await cur.executemany(UPSERT, [index.upsert_params(f"v{i}", v, namespace="grows")
                                               for i, v in enumerate(vectors)])
        for i in range(3):  # and one at a time, as a search stores them
            await index.upsert(f"s{i}", vectors[i], namespace="small")
        rows = await db.fetch("SELECT namespace, indexed, count(*) AS n FROM vector_index "
                              "WHERE index_name = 'graph-test' GROUP BY 1, 2 ORDER BY 1, 2")
        assert [(r["namespace"], r["indexed"], r["n"]) for r in rows] == [
            ("grows", False, EXACT_MAX), ("grows", True, 5), ("small", False, 3)]
        # the partial index is what keeps them out: only `indexed` vectors are in it
        definition = (await db.fetchone("SELECT indexdef FROM pg_indexes WHERE indexname = 'vector_index_embedding_hnsw'"))
        assert definition["indexdef"].endswith("WHERE indexed"), definition
    finally:
        await db.execute("DELETE FROM vector_index WHERE index_name = 'graph-test'")
