"""The semantic-cache lookup (migration 0020, ``semantic_cache_nearest``): a small scope's statement
runs a plan made once per session, which is the plan its custom planning makes, and finds what an
exact search finds; a large scope's statement is still planned with its values and walks the HNSW
index. Plans of the function's own statements are read through auto_explain's nested statements.

The scopes live in a database of their own (tests/helpers.py, database_of_its_own): on the shared
one, other tests' cache rows and autovacuum's timing move the estimates, enough for the large
scope's indexed vectors to be estimated at ~100 rows and sorted instead of walked through the HNSW
index."""

from __future__ import annotations

import json
import re

import numpy as np
import psycopg
import pytest
from edgeindex import sqlfiles
from edgeindex.bindings.database import _configure
from edgeindex.bindings.vectorize import EXACT_MAX, UPSERT, PgVectorIndex
from psycopg.rows import dict_row, tuple_row

from ..helpers import database_of_its_own

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
INDEX = "lookup-test"
SIZES = {"one": 1, "some": 40, "almost": EXACT_MAX - 1, "big": EXACT_MAX + 300}
QUERY = sqlfiles.load("vectorize.sql")["query"]
_SHAPE = ("Node Type", "Parent Relationship", "Relation Name", "Index Name", "Strategy")


def _unit(rows: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(rows, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
async def db(stack):
    """A database of this module's own (overrides the session's): the same planner inputs on every run."""
    async with database_of_its_own(stack, "semantic_lookup") as database:
        yield database


@pytest.fixture(scope="module")
async def scopes(db):
    """Scopes of 1, 40, EXACT_MAX - 1 and EXACT_MAX + 300 vectors (the last one's newest 300 in the
    HNSW graph), a vector of another model in the small scope, and 300 one-vector scopes beside them."""
    index = PgVectorIndex(db, INDEX, model_id=MODEL, dimension=384)
    vectors = {name: _unit(n, seed) for seed, (name, n) in enumerate(SIZES.items(), start=1)}
    async with db.transaction() as conn:
        async with conn.cursor() as cur:
            for name, rows in vectors.items():
                await cur.executemany(UPSERT, [index.upsert_params(f"{name}-{i}", v, namespace=name)
                                               for i, v in enumerate(rows)])
            await cur.executemany(UPSERT, [index.upsert_params(f"other-{i}", v, namespace=f"other-{i}")
                                           for i, v in enumerate(_unit(300, 99))])
            other_model = {**index.upsert_params("some-other-model", vectors["some"][0], namespace="some"),
                           "model": "another/model"}
            await cur.execute(UPSERT, other_model)
    async with db.autocommit() as conn:
        await conn.execute("ANALYZE vector_index")
    yield index, vectors
    await db.execute("DELETE FROM vector_index WHERE index_name = %s", (INDEX,))


async def _pooled_like(db) -> psycopg.AsyncConnection:
    """A connection set up as the pool sets its own (custom plans), with auto_explain sending every
    plan, the function's statements included, to the client as a notice."""
    conn = await psycopg.AsyncConnection.connect(db.dsn or db.pool.conninfo, row_factory=dict_row)
    await _configure(conn)
    await conn.set_autocommit(True)
    for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                    "SET auto_explain.log_nested_statements = on", "SET client_min_messages = log"):
        await conn.execute(setting)
    return conn


async def _lookup_plans(conn: psycopg.AsyncConnection, namespace: str, vector: np.ndarray,
                        k: int = 3) -> tuple[list[dict], list[str]]:
    """The lookup's rows, and the plan of each statement it ran (the function's own statements first)."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    cur = await conn.execute(QUERY, {"index": INDEX, "namespace": namespace, "model": MODEL,
                                     "embedding": vector, "k": k, "exact_max": EXACT_MAX})
    rows = await cur.fetchall()
    conn._notice_handlers.clear()
    return rows, notices


async def test_a_small_scopes_lookup_runs_the_plan_made_once_a_large_one_its_own(db, scopes):
    _, vectors = scopes
    conn = await _pooled_like(db)
    try:
        for name in ("one", "some", "almost", "one", "some"):
            rows, plans = await _lookup_plans(conn, name, vectors[name][0])
            assert rows[0]["id"] == f"{name}-0" and rows[0]["score"] > 0.999, rows
            [scan] = [plan for plan in plans if "ORDER BY (v.embedding <=> p_embedding) + 0" in plan]
            # the generic plan names the scope as a parameter: no value of this call is in it
            assert "namespace = $2" in scan and f"'{name}'" not in scan, scan
            assert "Index Scan using vector_index_namespace_idx" in scan, scan
            assert not any("vector_index_embedding_hnsw" in plan for plan in plans)
        rows, plans = await _lookup_plans(conn, "big", vectors["big"][EXACT_MAX + 5])
        assert rows[0]["id"] == f"big-{EXACT_MAX + 5}" and rows[0]["score"] > 0.999, rows
        [scan] = [plan for plan in plans if "approximate AS MATERIALIZED" in plan]
        # planned with its values (the scope written in), walking the graph for its indexed vectors
        assert "namespace = 'big'::text" in scan and "vector_index_embedding_hnsw" in scan, scan
    finally:
        await conn.close()


def _small_statement(source: str) -> str:
    """The small scope's statement as the function holds it, its arguments as $n (as its plan has them)."""
    statement = re.search(r"RETURN QUERY\s+(SELECT .*?);", source, re.S).group(1)
    for number, name in enumerate(("p_index", "p_namespace", "p_model", "p_embedding", "p_k"), start=1):
        statement = re.sub(rf"\b{name}\b", f"${number}", statement)
    return statement


def _tree(plan: dict, depth: int = 0) -> list[str]:
    node = "  " * depth + " ".join(str(plan.get(key)) for key in _SHAPE)
    return [node, *(line for child in plan.get("Plans", []) for line in _tree(child, depth + 1))]


@pytest.mark.parametrize("namespace", ["one", "some", "almost", "none-such"])
async def test_the_plan_made_once_is_the_custom_plan_of_a_small_scope(db, scopes, namespace):
    """Limit, sort and the scope's b-tree, except where a scope holds most of the table (here "almost": 999 of ~1,640
    rows), whose custom plan reads the whole table (a sequential scan) where the plan made once
    reads the scope's rows through its b-tree: the same rows either way (the next test)."""
    _, vectors = scopes
    async with db.connection() as conn:
        source = (await (await conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'semantic_cache_nearest'"))
                  .fetchone())["prosrc"]
        statement = _small_statement(source)
        cursor = psycopg.AsyncRawCursor(conn, row_factory=tuple_row)
        await cursor.execute("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + statement)
        generic = (await cursor.fetchone())[0]
        vector = "[" + ",".join(repr(float(x)) for x in vectors["some"][0]) + "]"
        values = (f"'{INDEX}'::text", f"'{namespace}'::text", f"'{MODEL}'::text", f"'{vector}'::vector", "3")
        custom_text = re.sub(r"\$(\d)", lambda m: values[int(m.group(1)) - 1], statement)
        await cursor.execute("EXPLAIN (FORMAT JSON) " + custom_text)
        custom = (await cursor.fetchone())[0]
        await cursor.close()
        await conn.rollback()
    as_json = (lambda p: json.loads(p) if isinstance(p, str) else p)
    generic_tree, custom_tree = _tree(as_json(generic)[0]["Plan"]), _tree(as_json(custom)[0]["Plan"])
    assert generic_tree == ["Limit None None None None", "  Sort Outer None None None",
                            "    Index Scan Outer vector_index vector_index_namespace_idx None"]
    if namespace == "almost":
        assert custom_tree[2].strip().startswith(("Seq Scan", "Bitmap Heap Scan", "Index Scan")), custom_tree
    else:
        # the same b-tree, read as an index scan or (the shared test database's statistics) a bitmap scan of it
        assert custom_tree[:2] == generic_tree[:2], custom_tree
        assert any("vector_index_namespace_idx" in node for node in custom_tree[2:]), custom_tree


async def test_a_lookup_finds_the_exact_nearest_of_its_scope_and_model(db, scopes):
    index, vectors = scopes
    rng = np.random.default_rng(5)
    for name in ("some", "almost"):
        for _ in range(3):
            query = vectors[name][rng.integers(len(vectors[name]))] + rng.normal(scale=0.05, size=384)
            query = (query / np.linalg.norm(query)).astype(np.float32)
            found = await index.query(query, namespace=name, top_k=3)
            exact = np.argsort(-(vectors[name] @ query))[:3]
            assert [m.id for m in found] == [f"{name}-{i}" for i in exact]
            assert [m.score for m in found] == pytest.approx([float(vectors[name][i] @ query) for i in exact],
                                                             abs=1e-5)
    # another model's vector in the scope is never an answer, however close
    assert "some-other-model" not in [m.id for m in await index.query(vectors["some"][0], namespace="some",
                                                                          top_k=3)]
    assert await index.query(vectors["one"][0], namespace="none-such", top_k=3) == []
