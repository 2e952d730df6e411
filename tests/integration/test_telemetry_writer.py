"""Telemetry rows go to Postgres in groups (shared/routing/telemetry_writer.py), on the real database:
concurrent searches share one statement, feedback can flush its process's waiting rows, a failed
group never fails a search, and an agent that reports feedback at once finds its search."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from edgeindex.bindings.database import Database
from edgeindex.routing.telemetry_writer import TelemetryWriter, dumps
from psycopg import pq

from ..helpers import new_tenant, put_document, wait_document

TABLE = "telemetry_writer_probe"
INSERT = f"INSERT INTO {TABLE} (id, body) VALUES (%(id)s, %(body)s)"


async def probe_table(db) -> str:
    await db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id text PRIMARY KEY, body text NOT NULL)")
    return uuid.uuid4().hex[:8]


async def count(db, prefix: str) -> int:
    row = await db.fetchone(f"SELECT count(*) AS n FROM {TABLE} WHERE id LIKE %s", (prefix + "%",))
    return row["n"]


async def test_concurrent_rows_share_one_group(db):
    prefix = await probe_table(db)
    writer = TelemetryWriter(db, INSERT, window=0.2)
    await asyncio.wait_for(asyncio.gather(*(writer.add({"id": f"{prefix}-{i}", "body": "x"}) for i in range(40))),
                           timeout=10)
    assert await count(db, prefix) == 40  # every add returned only once its row was written
    assert writer.groups_written == 1


async def test_a_full_group_goes_at_once_and_flush_does_not_wait_for_the_window(db):
    prefix = await probe_table(db)
    writer = TelemetryWriter(db, INSERT, window=3600, max_rows=5)
    # a full group does not wait for the hour-long window
    await asyncio.wait_for(asyncio.gather(*(writer.add({"id": f"{prefix}-a{i}", "body": "x"}) for i in range(5))),
                           timeout=10)
    assert await count(db, prefix) == 5
    waiting = asyncio.ensure_future(writer.add({"id": f"{prefix}-b", "body": "x"}))
    await asyncio.sleep(0)  # let it queue its row
    await asyncio.wait_for(writer.flush(), timeout=10)
    await asyncio.wait_for(waiting, timeout=10)
    assert await count(db, prefix) == 6 and writer.groups_written == 2


async def test_a_failed_group_is_logged_not_raised(db, caplog):
    prefix = await probe_table(db)
    writer = TelemetryWriter(db, INSERT, window=0.01)
    # NULL violates NOT NULL: the whole group fails, the caller carries on
    await asyncio.wait_for(asyncio.gather(writer.add({"id": f"{prefix}-ok", "body": "x"}),
                                          writer.add({"id": f"{prefix}-bad", "body": None})), timeout=10)
    assert await count(db, prefix) == 0 and writer.groups_written == 0
    assert "could not write 2 telemetry row(s)" in caplog.text


async def test_feedback_sent_at_once_finds_its_search(stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="tw")
    put_document(t, "d1", "Winter tyres keep their grip below seven degrees because their rubber stays soft.")
    assert (await wait_document(t, "d1"))["status"] == "ready"
    status, answer = t.search.post("/search", {"entity_ids": [t.entity_id], "query": "winter tyres grip",
                                               "cache": False})
    assert status == 200 and answer["results"], answer
    # no polling for the telemetry row: the agent reports the moment it has the answer
    status, body = t.search.post("/feedback", {"search_id": answer["search_id"],
                                               "useful": [answer["results"][0]["chunk_id"]]})
    assert status == 200, body


async def test_a_copy_group_writes_every_row_as_given(db):
    # the search telemetry's path: tuples through COPY, text that COPY must escape, NULLs, arrays
    await db.execute("CREATE TABLE IF NOT EXISTS telemetry_copy_probe (id text PRIMARY KEY, tags text[] NOT NULL, "
                     "body jsonb, n float8)")
    prefix = uuid.uuid4().hex[:8]
    writer = TelemetryWriter(db, "COPY telemetry_copy_probe (id, tags, body, n) FROM STDIN", window=0.2, copy=True)
    rows = [(f"{prefix}-{i}", ["a,b", 'say "hi"', "tab\there"], '{"q": "line\\nbreak \\\\ back"}' if i else None,
             i / 3) for i in range(30)]
    await asyncio.wait_for(asyncio.gather(*(writer.add(row) for row in rows)), timeout=10)
    assert writer.groups_written == 1
    stored = await db.fetch("SELECT id, tags, body, n FROM telemetry_copy_probe WHERE id LIKE %s ORDER BY n",
                            (prefix + "%",))
    assert [(r["id"], r["tags"], r["body"], r["n"]) for r in stored] == [
        (f"{prefix}-{i}", ["a,b", 'say "hi"', "tab\there"], {"q": "line\nbreak \\ back"} if i else None, i / 3)
        for i in range(30)]


async def test_a_search_row_is_written_by_drain_and_a_bad_row_fails_no_search(db, caplog):
    # the worker hands record's future to ctx.wait_until (no task per search): drain at shutdown
    # must still wait for the row
    from edgeindex.env import ExecutionContext
    from edgeindex.routing.service import Router, RouterSettings

    router = Router(db, RouterSettings())
    ctx = ExecutionContext()
    search_id = str(uuid.uuid4())
    result = {"chunk_id": str(uuid.uuid4()), "document_id": "d1", "entity_id": "e1", "score": 0.5,
              "scores": {"text": 0.5}}
    ctx.wait_until(router.record(search_id, key_id="k1", entity_ids=["e1"], scope_hash="h", query="tab\there",
                                 decision=None, results=[result], cache="exact", timings={"took_ms": 1.0}))
    await asyncio.wait_for(ctx.drain(), timeout=10)
    row = await db.fetchone("SELECT query, cache, results, results::text AS stored, timings::text AS timings "
                            "FROM search_telemetry WHERE search_id = %s", (search_id,))
    assert row is not None and (row["query"], row["cache"]) == ("tab\there", "exact")
    assert row["results"] == [result]
    # kept as the JSON the worker sent (json, migration 0019), not parsed into jsonb's binary form:
    # that parse was most of the row's Postgres CPU
    assert (row["stored"], row["timings"]) == (dumps([result]).decode(), '{"took_ms":1.0}')
    # a row that cannot be made is logged; the search it belongs to goes on
    assert router.record(str(uuid.uuid4()), key_id="k1", entity_ids=["e1"], scope_hash="h", query="q", decision=None,
                         results=[{"chunk_id": "c"}], cache="none", timings={}) is None
    assert "could not make the telemetry row" in caplog.text


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "pipelined upserts"])
async def test_a_group_is_one_statement_without_begin_or_commit(stack, tmp_path, copy):
    # a group is its own transaction in autocommit: BEGIN and COMMIT were two more round trips per
    # group (half the writer's CPU). The libpq trace of the pool's one connection shows what was sent.
    db = Database(stack.dsn, min_size=1, max_size=1)
    await db.open()
    try:
        await probe_table(db)
        prefix = uuid.uuid4().hex[:8]
        if copy:
            writer = TelemetryWriter(db, f"COPY {TABLE} (id, body) FROM STDIN", window=0.2, copy=True)
            rows = [(f"{prefix}-{i}", "x") for i in range(20)]
        else:
            writer = TelemetryWriter(db, INSERT + " ON CONFLICT (id) DO UPDATE SET body = excluded.body", window=0.2)
            rows = [{"id": f"{prefix}-{i % 15}", "body": str(i)} for i in range(20)]  # upserts
        trace_path = tmp_path / "libpq.trace"
        with trace_path.open("w") as trace:
            async with db.connection() as conn:
                conn.pgconn.trace(trace.fileno())
                conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            await asyncio.wait_for(asyncio.gather(*(writer.add(row) for row in rows)), timeout=10)
            async with db.connection() as conn:
                conn.pgconn.untrace()
        assert writer.groups_written == 1 and await count(db, prefix) == (20 if copy else 15)
        sent = [line for line in trace_path.read_text().splitlines() if line.startswith("F\t")]
        statements = [line for line in sent if "\tQuery\t" in line or "\tParse\t" in line]
        assert not [line for line in statements if "BEGIN" in line or "COMMIT" in line], statements
        if copy:
            assert len(statements) == 1 and "COPY" in statements[0], statements
        else:  # one pipeline: its statements, then one sync
            assert sum("\tSync" in line for line in sent) == 1, sent
    finally:
        await db.close()
