"""The database binding's one-statement helpers (fetch, fetchone, execute) run the statement as
its own transaction, with no BEGIN and COMMIT round trips around it (two of every three round
trips of a semantic-cache lookup, a telemetry row or a semantic-cache write)."""

from __future__ import annotations

import psycopg
import pytest


async def test_a_single_statement_is_sent_without_begin(db):
    # VACUUM refuses to run inside a transaction block: it runs only if no BEGIN was sent first
    await db.execute("VACUUM embedding_model")
    assert (await db.fetchone("SELECT 1 AS x"))["x"] == 1
    assert [r["x"] for r in await db.fetch("SELECT generate_series(1, 3) AS x")] == [1, 2, 3]


async def test_a_failed_statement_leaves_the_pooled_connection_usable(db):
    with pytest.raises(psycopg.errors.DivisionByZero):
        await db.fetchone("SELECT 1 / 0 AS x")
    assert (await db.fetchone("SELECT 2 AS x"))["x"] == 2
    # the pool's connections are back to explicit transactions for everyone else
    async with db.transaction() as conn:
        assert not conn.autocommit
        with pytest.raises(psycopg.errors.ActiveSqlTransaction):
            await conn.execute("VACUUM embedding_model")
