"""Search connections warmed before the first request (search/engine.py: warm): the generic pool
opens them and keeps them as its minimum, each tuned and having run the reused search statement, so a
search that follows neither waits for a new connection nor prepares the statement on a cold backend."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
from edgeindex.bindings.database import Database
from edgeindex.search import engine, plan_reuse

DIMENSION = 384


@pytest.fixture
async def own_db(stack):
    """A pool of its own: warming resizes the generic pool, which the shared ``db`` must not see."""
    database = Database(stack.dsn, max_size=4)
    await database.open()
    yield database
    await database.close()


@pytest.mark.skipif(not plan_reuse.ENABLED, reason="the warm-up runs the reused statement")
async def test_warm_opens_the_connections_tuned_with_the_search_statement_run_and_keeps_them(own_db):
    pool, tuned = own_db.generic_pool, engine.tuned_connections()
    assert pool.get_stats().get("pool_size", 0) == 0  # min_size 0: nothing opened before a search

    assert await engine.warm(own_db, tuned=tuned, connections=3, dimension=DIMENSION) == 3

    made = pool.get_stats()["connections_num"]
    assert made == 3
    assert pool.min_size == 3  # kept: the pool does not shrink below its minimum
    async with AsyncExitStack() as stack:
        conns = [await stack.enter_async_context(own_db.generic_connection()) for _ in range(3)]
        assert len({id(c) for c in conns}) == 3
        for conn in conns:
            assert conn in tuned  # the search settings were applied: the next search sends no SET
            cur = await conn.execute("SELECT count(*) AS n, sum(generic_plans) AS generic FROM pg_prepared_statements "
                                     "WHERE statement LIKE %s", (f"%{engine.WARM_ENTITY}%",))
            row = await cur.fetchone()
            assert (row["n"], row["generic"]) == (1, 1)  # prepared and run once, under its generic plan
            assert (await (await conn.execute("SHOW hnsw.ef_search")).fetchone())["hnsw.ef_search"] == \
                str(engine.defaults.HNSW_EF_SEARCH)
    assert pool.get_stats()["connections_num"] == made  # the three were there: no connection made on demand


async def test_warm_of_no_connections_opens_none(own_db):
    assert await engine.warm(own_db, tuned=engine.tuned_connections(), connections=0, dimension=DIMENSION) == 0
    assert own_db.generic_pool.get_stats().get("connections_num", 0) == 0
