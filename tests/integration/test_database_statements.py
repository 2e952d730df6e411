"""The database binding's one-statement helpers run the statement as its own transaction, with
no BEGIN and COMMIT round trips around it (two of every three round trips of a cache lookup,
a telemetry row or a semantic-cache write)."""

from __future__ import annotations

import psycopg
import pytest

# In autocommit the statement starts its own transaction, so the transaction's timestamp is the
# statement's; after a separate BEGIN it is the BEGIN's, a round trip earlier.
OWN = "SELECT now() = statement_timestamp() AS own, txid_current_if_assigned() AS txid"


async def test_fetchone_fetch_and_execute_run_without_begin(db):
    for _ in range(3):
        assert (await db.fetchone(OWN))["own"] is True
        assert (await db.fetch(OWN))[0]["own"] is True
    assert await db.execute("SELECT 1 WHERE now() = statement_timestamp()") == 1


async def test_a_failed_statement_leaves_the_pooled_connection_usable(db):
    with pytest.raises(psycopg.errors.DivisionByZero):
        await db.fetchone("SELECT 1 / 0 AS x")
    assert (await db.fetchone("SELECT 2 AS x"))["x"] == 2
    async with db.transaction() as conn:  # the pool's connections are back to explicit transactions
        row = await (await conn.execute("SELECT now() = statement_timestamp() AS own")).fetchone()
        assert row["own"] is False
