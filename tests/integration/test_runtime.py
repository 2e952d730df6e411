"""The local stack: every worker answers /health on its own port with its bindings."""

from __future__ import annotations

import asyncio
import hashlib
import logging

import psycopg
import pytest
from edgeindex.bindings.database import STATEMENTS_CHECKSUM, Database, discover
from edgeindex.errors import ModelMismatchError

from ..helpers import ROOT, Client, new_database


@pytest.mark.parametrize("name,expected", [
    ("upload", {"BUCKET", "DB", "KV"}),
    ("ingest", {"BUCKET", "DB", "KV", "AI", "INGEST_WORKFLOW", "INGEST_QUEUE"}),
    ("search", {"DB", "KV", "AI", "SEMANTIC_CACHE"}),
])
def test_health_lists_bindings(stack, name, expected):
    status, body = Client(stack.url(name)).get("/health")
    assert status == 200
    assert body["worker"] == name
    assert set(body["bindings"]) == expected
    # start-up's objects are frozen: full collections never walk the model and modules again
    assert body["gc_frozen_objects"] > 10_000
    if "AI" in expected:
        assert body["bindings"]["AI"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert body["bindings"]["AI"]["dimension"] == 384


def test_unknown_route_is_json_404(stack):
    status, body = Client(stack.url("search")).get("/nope")
    assert status == 404 and body["error"] == "not_found"


async def test_migrations_are_idempotent(stack, db):
    folder = ROOT / "infra" / "migrations"
    applied = await db.migrate(folder, model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
    assert applied == []
    rows = await db.fetch("SELECT version FROM schema_migrations ORDER BY version")
    assert [r["version"] for r in rows] == [m.version for m in discover(folder)]
    exts = {r["extname"] for r in await db.fetch("SELECT extname FROM pg_extension")}
    assert {"vector", "pg_trgm"} <= exts


async def test_a_whole_file_checksum_is_replaced_and_a_changed_statement_warns(stack, db, caplog):
    """A row recorded with a whole-file checksum (comments included) gets the statements' checksum
    without a warning; a recorded statements' checksum that differs from the file's warns."""
    folder = ROOT / "infra" / "migrations"
    first = discover(folder)[0]
    await db.execute("UPDATE schema_migrations SET checksum = %s WHERE version = %s",
                     (hashlib.sha256(first.path.read_bytes()).hexdigest(), first.version))
    with caplog.at_level(logging.WARNING, logger="edgeindex.bindings.database"):
        assert await db.migrate(folder, model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384) == []
    assert "changed after it was applied" not in caplog.text
    row = await db.fetchone("SELECT checksum FROM schema_migrations WHERE version = %s", (first.version,))
    assert row["checksum"] == first.checksum()
    await db.execute("UPDATE schema_migrations SET checksum = %s WHERE version = %s",
                     (STATEMENTS_CHECKSUM + "0" * 64, first.version))
    try:
        with caplog.at_level(logging.WARNING, logger="edgeindex.bindings.database"):
            await db.migrate(folder, model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
        assert f"migration {first.version:04d}_{first.name} changed after it was applied" in caplog.text
    finally:
        await db.execute("UPDATE schema_migrations SET checksum = %s WHERE version = %s",
                         (first.checksum(), first.version))


async def test_concurrent_migrations_do_not_race(stack):
    """Three processes starting at once on a database nobody migrated yet: one applies every migration,
    the others wait for it and apply nothing."""
    folder = ROOT / "infra" / "migrations"
    dsn = await new_database(stack, "fresh")
    dbs = [Database(dsn) for _ in range(3)]
    results = await asyncio.gather(*(d.migrate(folder, model_id="sentence-transformers/all-MiniLM-L6-v2",
                                                dimension=384) for d in dbs))
    everything = [m.version for m in discover(folder)]
    assert sorted(results, key=len) == [[], [], everything]
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("SELECT version FROM schema_migrations ORDER BY version")
        assert [r[0] for r in await cur.fetchall()] == everything


async def test_model_mismatch_is_refused(stack, db):
    with pytest.raises(ModelMismatchError) as err:
        await db.migrate(ROOT / "infra" / "migrations", model_id="text-embedding-3-small", dimension=1536)
    assert "all-MiniLM-L6-v2" in err.value.message and "1536" in err.value.message
