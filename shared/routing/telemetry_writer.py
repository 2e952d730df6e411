"""Rows written in groups, off the request path.

Rows gather for a window (or until a group is full) and go in as one statement, instead of a
pool checkout, a round trip and a commit per row: on an exact-cache hit (a fraction of a
millisecond of work) a row of its own would be the largest cost after the socket write.

A group is one statement in autocommit, its own transaction: no BEGIN and COMMIT round trips
(which would be about half the writer's CPU). Two ways to send it:
- ``copy=True``: ``COPY ... FROM STDIN``. Rows are tuples in the statement's column order,
  formatted by psycopg's C row writer; Postgres inserts them without planning or executing a
  statement per row. The search telemetry goes this way (a row per answer, exact-cache hits
  included, thousands a second); the writer yields to the event loop every ``YIELD_EVERY`` rows
  so a large group never holds up requests for a whole loop step.
- otherwise one pipelined ``executemany`` (one implicit transaction up to its sync): writes that
  must upsert (the semantic-cache pointers).

The window is long enough that a group at a few searches a second is several rows (each group
costs a pool checkout and its round trips in the worker, and a commit in Postgres), and short
enough that what reads the rows soon after (feedback from another process, the load test's proof
of outcomes) waits little; a full group goes at once. What a crash of the process loses is the
open window's rows: telemetry is evidence, not state, and a lost semantic-cache pointer is only
a miss (a pointer names an exact entry, checked on every hit).

Each search hands its row's group (``enqueue``'s future, through ``Router.record``) to
``ctx.wait_until``, so the worker's ``ctx.drain()`` at shutdown waits for every row, and
``flush()`` lets feedback read a row its own process has not written yet. A failed group is
logged once; a search never fails for its telemetry.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import orjson

from ..bindings.database import Database

log = logging.getLogger(__name__)
YIELD_EVERY = 16  # COPY rows formatted between two yields to the event loop
WINDOW = 0.2      # seconds the first row of a group waits for company


def dumps(value: Any) -> bytes:
    """JSON for the telemetry columns: orjson, or the standard library for what orjson refuses
    (integers over 64 bits in a result's metadata, say)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, default=str).encode()


class TelemetryWriter:
    def __init__(self, db: Database, statement: str, *, window: float = WINDOW, max_rows: int = 200,
                 copy: bool = False) -> None:
        self.db = db
        self.statement = statement
        self.copy = copy              # statement is a COPY ... FROM STDIN, rows are tuples
        self.window = window          # how long the first row of a group waits for company
        self.max_rows = max_rows      # a full group goes at once
        self._rows: list[dict] = []
        self._group: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.groups_written = 0       # statements sent (the tests read it)
        self._writing: set[asyncio.Task] = set()  # the loop keeps only weak references to tasks

    async def add(self, row: dict | tuple) -> None:
        """Queue ``row``; returns once the group holding it is written (or failed, logged)."""
        await asyncio.shield(self.enqueue(row))

    def enqueue(self, row: dict | tuple) -> asyncio.Future:
        """Queue ``row`` without a coroutine of its own: the future is done once its group is
        written (or failed, logged). Hand it to ``ctx.wait_until`` so that drain waits for it;
        a search's telemetry row costs no task this way."""
        if self._group is None:
            loop = asyncio.get_running_loop()
            self._group = loop.create_future()
            self._timer = loop.call_later(self.window, self._send)
        group = self._group
        self._rows.append(row)
        if len(self._rows) >= self.max_rows:
            self._send()
        return group

    async def flush(self) -> None:
        """Write what is waiting now (feedback reads the rows of searches just answered)."""
        if self._group is not None:
            group = self._group
            self._send()
            await asyncio.shield(group)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        rows, group = self._rows, self._group
        self._rows, self._group, self._timer = [], None, None
        if group is None:
            return
        task = asyncio.ensure_future(self._write(rows))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)
        task.add_done_callback(lambda _: group.done() or group.set_result(None))

    async def _write(self, rows: list[dict]) -> None:
        try:
            # one statement (a COPY, or one pipeline of upserts up to its sync) is its own
            # transaction: BEGIN and COMMIT would be two more round trips per group, a few percent of
            # the search worker's CPU per uncached search at 8 agents
            async with self.db.autocommit() as conn:
                async with conn.cursor() as cursor:
                    if self.copy:
                        async with cursor.copy(self.statement) as copy:
                            for index, row in enumerate(rows, 1):
                                await copy.write_row(row)
                                if index % YIELD_EVERY == 0:
                                    # formatting a full group is one loop step of a millisecond or
                                    # more; searches answered meanwhile would queue behind it
                                    await asyncio.sleep(0)
                    else:
                        await cursor.executemany(self.statement, rows)
            self.groups_written += 1
        except Exception:
            log.exception("could not write %d telemetry row(s)", len(rows))
