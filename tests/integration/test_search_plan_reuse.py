"""The search statement planned once (search/plan_reuse.py): its generic plan is the custom plan,
node for node with the same estimates, on tenants of many sizes (a large tenant beside 200 small ones
in its partition: the case where a fully parameterised generic plan sorted by exact distance), and
the rows are those of custom plans; it runs on the generic pool, and the main pool keeps custom plans.

The tenants live in a database of their own, with fixed names and no autovacuum. On the shared
database, the planner's inputs moved between runs: which partition the tenants hashed into, what
other tests had left there, and whether autovacuum had yet marked the new pages all-visible. A join
or scan that costs nearly the same either way then flipped in 1 run of 4 (CI of stop 29)."""

from __future__ import annotations

import json
import re

import numpy as np
import psycopg
import pytest
from edgeindex.bindings.ai import LOCAL_MODEL_ID
from edgeindex.evaluation import loader
from edgeindex.search import defaults, engine, plan_reuse
from edgeindex.search.request import parse_request
from psycopg.rows import tuple_row

from ..helpers import DATA, database_of_its_own

MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
LARGE = 2500
SMALL_TENANTS, SMALL_CHUNKS = 200, 4

REQUESTS = [
    {"query": "what is the temperature of the sun"},
    {"query": "thermometer fahrenheit scale", "alpha": 0.0},
    {"query": "thermometer fahrenheit scale", "alpha": 1.0},
    {"query": "causes of high blood pressure", "fusion": "rrf"},
    {"query": "causes of high blood pressure", "dedupe": True, "k": 5},
    {"query": "fahrenhiet thermometr", "alpha": 0.5},
    {"query": "\"blood pressure\" -heart", "text_mode": "websearch"},
    {"query": "how long to boil an egg", "filters": {"tags": ["t1", "t2"]}},
    {"query": "how long to boil an egg", "filters": {"document_ids": ["doc3", "doc4", "doc9"]}},
    {"query": "how long to boil an egg", "filters": {"exclude_document_ids": ["doc0", "doc1"]},
     "include": {"summary": True, "neighbours": 1}},
    {"query": "zzqxv wvqzz"},
    {"query": "blood pressure", "vector_threshold": 0.2, "text_threshold": 0.3, "k": 3},
]


@pytest.fixture(scope="module")
async def db(stack):
    """A database of this module's own (overrides the session's): the same planner inputs on every run."""
    async with database_of_its_own(stack, "plan_reuse", model_id=MODEL_ID, dimension=DIMENSION) as database:
        yield database


@pytest.fixture(scope="module")
async def tenants(db):
    """A large tenant (HNSW path) and 200 small ones hashed into the same partition, vacuumed and
    analysed (every row is in ANALYZE's sample, and every page is all-visible)."""
    texts = loader.read_passages(DATA / "msmarco" / "corpus.jsonl")
    large = "reuse-large"
    assert LARGE > defaults.EXACT_MAX_CHUNKS
    assert await loader.load_synthetic(db, large, texts, LARGE, model_id=MODEL_ID, dimension=DIMENSION) == LARGE
    partition = (await db.fetchone("SELECT tableoid::regclass::text AS p FROM chunks WHERE entity_id = %s LIMIT 1",
                                   (large,)))["p"]
    small, candidate = [], 0
    while len(small) < SMALL_TENANTS:
        name, candidate = f"reuse-small-{candidate}", candidate + 1
        row = await db.fetchone("SELECT satisfies_hash_partition('chunks'::regclass, 8, %s, %s::text) AS ok",
                                (int(partition.rsplit("p", 1)[1]), name))
        if row["ok"]:
            await loader.load_synthetic(db, name, texts, SMALL_CHUNKS, model_id=MODEL_ID, dimension=DIMENSION,
                                        seed=len(small) + 1, offset=len(small) * SMALL_CHUNKS)
            small.append(name)
    for table in ("chunks", "documents", "term_stats", "entity_stats"):
        await db.execute(f"VACUUM ANALYZE {table}")
    return {"large": [large], "small": [small[0]], "both": [large, small[7]], "many small": small[:5]}


def _embedding(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return v / np.linalg.norm(v)


def _params(body: dict, entity_ids: list[str]) -> dict:
    request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
    return engine.build_params(request, entity_ids, _embedding(len(body["query"])), limit=request.k,
                               model_id=LOCAL_MODEL_ID)


_SHAPE = ("Node Type", "Parent Relationship", "Subplan Name", "Relation Name", "Index Name", "Join Type",
          "Strategy")


def _tree(plan: dict, depth: int = 0) -> list[str]:
    """A plan's nodes (kind, relation, index, join) in order, each at its depth, without its
    expressions: the generic plan shows $1 where the custom one shows the vector."""
    node = "  " * depth + " ".join(str(plan.get(key)) for key in _SHAPE)
    return [node, *(line for child in plan.get("Plans", []) for line in _tree(child, depth + 1))]


def _rows(plan: dict) -> list[float]:
    """Each node's row estimate, in _tree's order. The query text stays a parameter (KEPT), so an
    estimate that follows from its words' statistics (a lexical branch's match count under its
    LIMIT) may differ by a row or two between the generic and the custom plan, as ANALYZE's
    sample of the tsvector column moves: seen as 20 against 19 once. The entities' own estimates
    are literals, so a plan built for another tenant's size is off by far more than this."""
    return [float(plan["Plan Rows"]), *(r for child in plan.get("Plans", []) for r in _rows(child))]


def _costs(plan: dict) -> list[float]:
    return [plan["Total Cost"], *(c for child in plan.get("Plans", []) for c in _costs(child))]


async def _plans(conn: psycopg.AsyncConnection, name: str, params: dict) -> tuple[dict, dict]:
    """(the generic plan of the text plan_reuse prepares, the custom plan of the same statement with
    every value written in)."""
    reused = engine.planned_once(name, params)
    cursor = psycopg.AsyncRawCursor(conn, row_factory=tuple_row)
    await cursor.execute("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + reused.text)
    generic = (await cursor.fetchone())[0]
    everything = {**params, "embedding": "[" + ",".join(repr(float(x)) for x in params["embedding"]) + "]"}
    idle = engine.idle_parts(params)
    whole = engine._variant_sql(name, idle, engine.dimension(params))
    custom_text = plan_reuse.build(whole, everything, kept=frozenset()).text
    await cursor.execute("EXPLAIN (FORMAT JSON) " + custom_text)
    custom = (await cursor.fetchone())[0]
    await cursor.close()
    as_json = (lambda p: json.loads(p) if isinstance(p, str) else p)
    return as_json(generic)[0]["Plan"], as_json(custom)[0]["Plan"]


@pytest.mark.parametrize("scope", ["large", "small", "both", "many small"])
async def test_the_reused_plan_is_the_custom_plan_on_tenants_of_every_size(db, tenants, scope):
    tuned = engine.tuned_connections()
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        await conn.set_autocommit(True)
        for body in REQUESTS:
            generic, custom = await _plans(conn, "search", _params(body, tenants[scope]))
            assert _tree(generic) == _tree(custom), body
            assert _rows(generic) == pytest.approx(_rows(custom), rel=0.1, abs=2), body
            # costs differ only by the scores' expressions (a threshold, or the model a chunk's vector
            # must be of, as a parameter is not folded): up to 1% of a node's
            assert _costs(generic) == pytest.approx(_costs(custom), rel=0.02, abs=0.1), body


async def test_the_large_tenants_vector_branch_walks_the_hnsw_index(db, tenants):
    """The comparison above is not vacuous: the large tenant's reused plan walks the HNSW index
    of its own partition alone (pruned at planning, as a custom plan is)."""
    params = _params(REQUESTS[0], tenants["large"])
    cursor = None
    async with db.connection() as conn:
        await conn.set_autocommit(True)
        cursor = psycopg.AsyncRawCursor(conn, row_factory=tuple_row)
        await cursor.execute("EXPLAIN (GENERIC_PLAN) " + engine.planned_once("search", params).text)
        plan = "\n".join(row[0] for row in await cursor.fetchall())
    assert "embedding_half_idx" in plan  # the half-precision index (migration 0021)
    assert len(set(re.findall(r"chunks_p(\d)", plan))) == 1


@pytest.mark.parametrize("scope", ["large", "small", "both"])
async def test_searches_with_the_reused_plan_return_what_custom_plans_return(db, tenants, scope):
    tuned = engine.tuned_connections()
    for body in REQUESTS:
        request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
        embedding = _embedding(len(body["query"]))
        custom = await engine.search(db, request, tenants[scope], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                     limit=request.k,
                                     plan_once=False)
        for _ in range(2):  # planned, then planned no more
            assert await engine.search(db, request, tenants[scope], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                       limit=request.k) == custom, body
    assert custom[1] or scope == "small"


async def _plan_cache_mode(conn: psycopg.AsyncConnection) -> str:
    return (await (await conn.execute("SHOW plan_cache_mode")).fetchone())["plan_cache_mode"]


async def test_the_statement_runs_its_generic_plan_on_a_connection_of_the_generic_pool(db, tenants):
    """A search's reused text runs on the generic pool (one statement, no plan_cache_mode switch
    around it) with the plan made once; the main pool's connections stay on custom plans."""
    request = parse_request({"k": 10, **REQUESTS[0]}, max_k=100, max_query_chars=2000)
    embedding = _embedding(len(REQUESTS[0]["query"]))
    params = _params(REQUESTS[0], tenants["large"])
    reused = engine.planned_once("search", params)
    tuned = engine.tuned_connections()

    async def plans(conn: psycopg.AsyncConnection) -> tuple[int, int]:
        row = await (await conn.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                        "WHERE statement = %s", (reused.text,))).fetchone()
        return (row["generic_plans"], row["custom_plans"]) if row else (0, 0)

    checkouts = db.generic_pool.get_stats().get("requests_num", 0)
    first = await engine.search(db, request, tenants["large"], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                                limit=10)
    assert len(first[1]) == 10
    assert db.generic_pool.get_stats().get("requests_num", 0) == checkouts + 1
    async with db.generic_connection() as conn:
        await conn.set_autocommit(True)
        assert await _plan_cache_mode(conn) == "force_generic_plan"
        rows = await plan_reuse.execute(conn, reused, params)
        before = await plans(conn)
        assert await plan_reuse.execute(conn, reused, params) == rows
        assert before[1] == 0 and await plans(conn) == (before[0] + 1, 0)  # never planned for its values
        wrong = {**params, "embedding": np.ones(DIMENSION + 1, dtype=np.float32)}
        with pytest.raises(psycopg.Error):
            await plan_reuse.execute(conn, engine.planned_once("search", wrong), wrong)
        assert await plan_reuse.execute(conn, reused, params) == rows  # usable after a failed statement
    assert await engine.search(db, request, tenants["large"], embedding, model_id=LOCAL_MODEL_ID, tuned=tuned,
                               limit=10) == first
    async with db.connection() as conn:
        assert await _plan_cache_mode(conn) == "force_custom_plan"
        assert await plans(conn) == (0, 0)  # the main pool never prepares the reused text


async def test_a_search_connection_keeps_a_bounded_number_of_prepared_statements(db, tenants):
    tuned = engine.tuned_connections()
    async with db.generic_connection() as conn:
        await engine.tune_connection(conn, tuned)
        await conn.set_autocommit(True)
        for k in range(1, plan_reuse.PREPARED_MAX + 8):  # each k its own text
            params = _params({"query": "blood pressure", "k": k}, tenants["large"])
            await plan_reuse.execute(conn, engine.planned_once("search", params), params)
        row = await (await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements")).fetchone()
        assert 0 < row["n"] <= plan_reuse.PREPARED_MAX + 1  # psycopg deallocates the oldest one statement later


@pytest.mark.parametrize("body", [{"query": "what is the temperature of the sun", "alpha": 1.0},
                                  {"query": "what is the temperature of the sun", "alpha": 1.0, "dedupe": True}])
async def test_the_hnsw_walk_yields_every_vector_candidate_asked_for(db, tenants, body):
    """Search connections walk the graph with hnsw.ef_search = defaults.HNSW_EF_SEARCH, which is no
    more than the candidates a search asks for (MIN_CANDIDATES; eight per result when deduplicated).
    pgvector's scan stops at ef_search rows unless it iterates (hnsw.iterative_scan, set on every
    pooled connection), so the large tenant's vector half must still bring all its candidates."""
    params = _params(body, tenants["large"])
    assert defaults.HNSW_EF_SEARCH <= params["n"]
    reused = engine.planned_once("search", params)
    tuned = engine.tuned_connections()
    async with db.generic_connection() as conn:
        await engine.tune_connection(conn, tuned)
        await conn.set_autocommit(True)
        assert (await (await conn.execute("SHOW hnsw.ef_search")).fetchone())["hnsw.ef_search"] == \
            str(defaults.HNSW_EF_SEARCH)
        explained = engine.Statement("EXPLAIN (ANALYZE, FORMAT JSON) " + reused.text, reused.names)
        plan = (await engine.execute(conn, explained, params))[0]["QUERY PLAN"]
        rows = await plan_reuse.execute(conn, reused, params)
    plan = json.loads(plan) if isinstance(plan, str) else plan

    def scans(node: dict) -> list[dict]:
        found = [node] if "embedding_half_idx" in node.get("Index Name", "") and node.get("Actual Loops") else []
        return found + [n for child in node.get("Plans", []) for n in scans(child)]

    walked = scans(plan[0]["Plan"])
    assert len(walked) == 1
    assert walked[0]["Actual Rows"] == params["n"], (walked[0]["Actual Rows"], params["n"])
    assert len([r for r in rows if r["chunk_id"] is not None]) == 10


async def test_the_half_precision_walk_only_picks_candidates_their_scores_are_full_precision(db, tenants):
    """The large tenant's walk is over the halfvec index (migration 0021), but each result's vector
    score is its full-precision cosine similarity to the query: half precision would be off by ~1e-3."""
    params = _params(REQUESTS[2], tenants["large"])  # vector only
    async with db.generic_connection() as conn:
        await engine.tune_connection(conn, engine.tuned_connections())
        await conn.set_autocommit(True)
        rows = await plan_reuse.execute(conn, engine.planned_once("search", params), params)
        found = [r for r in rows if r["chunk_id"] is not None]
        stored = {r["id"]: r["embedding"] for r in await (await conn.execute(
            "SELECT id, embedding FROM chunks WHERE entity_id = ANY(%s) AND id = ANY(%s)",
            (tenants["large"], [r["chunk_id"] for r in found]))).fetchall()}
    assert len(found) == 10
    query = params["embedding"].astype(np.float64)
    for row in found:
        vector = stored[row["chunk_id"]].to_numpy().astype(np.float64)
        expected = float(vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query)))
        assert row["vector"] == pytest.approx(expected, abs=1e-6)


async def test_a_configured_ef_search_is_what_search_connections_walk_with(db):
    """HNSW_EF_SEARCH (the search worker's var) reaches every pooled search connection."""
    tuned = engine.tuned_connections(ef_search=160)
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        shown = (await (await conn.execute("SHOW hnsw.ef_search")).fetchone())["hnsw.ef_search"]
        await engine.tune_connection(conn, engine.tuned_connections())  # leave the pool's default behind
    assert shown == "160"
