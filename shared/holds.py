"""Hold points: places where a worker can be held so a test orders concurrent writes exactly.

Races (a PUT against a DELETE of the same document, a DELETE against a running ingestion, two
PUTs) are tested by stopping one side at a named point while the other completes, not by
sleeping and hoping. A point is an advisory lock keyed by ``<point>:<entity>/<document>``: the
test takes it exclusively (``hold``), a worker passing the point takes it shared and lets go at
once, so it waits exactly as long as the test holds it. Live only in a worker started with holds
on (``python -m edgeindex.testing.worker --holds``, as the test stacks do); otherwise a point costs
nothing.

Points: ``upload:stored-version`` (a direct or worker-URL upload: its version row exists, its
bytes are not stored yet), ``upload:confirm`` (bytes stored, not yet confirmed against the row),
``delete:rows`` (a DELETE before its transaction), ``ingest:event`` (a queue message about the
document, before it is looked at), ``ingest:<step>`` (before each workflow step).
"""

from __future__ import annotations

import asyncio
import contextlib

from . import sqlfiles
from .bindings.database import Database

SQL = sqlfiles.load("holds.sql")
_enabled = False


def enable() -> None:
    """Make this process's hold points live (the test launcher does, before the worker starts)."""
    global _enabled
    _enabled = True


def point_key(point: str, entity_id: str, document_id: str) -> str:
    return f"hold:{point}:{entity_id}/{document_id}"


async def point(db: Database, point: str, entity_id: str, document_id: str) -> None:
    """Wait here while a test holds this point for this document (no-op unless enabled)."""
    if not _enabled:
        return
    key = {"point": point_key(point, entity_id, document_id)}
    async with db.connection() as conn:
        await conn.execute(SQL["pass_point"], key)
        await conn.execute(SQL["leave_point"], key)


class Hold:
    """The test side: ``async with Hold(db, point, entity, document) as hold: ... await hold.reached()``."""

    def __init__(self, db: Database, point: str, entity_id: str, document_id: str) -> None:
        self.db = db
        self.key = {"point": point_key(point, entity_id, document_id)}
        self._conn = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Hold:
        self._conn = await self._stack.enter_async_context(self.db.connection())
        await self._conn.execute(SQL["hold"], self.key)
        return self

    async def reached(self, timeout: float = 60.0) -> None:
        """Return once some worker waits at the point (polled, bounded)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (await self.db.fetchone(SQL["waiting"], self.key))["n"]:
            if loop.time() > deadline:
                raise TimeoutError(f"nothing reached {self.key['point']} in {timeout} s")
            await asyncio.sleep(0.05)

    async def release(self) -> None:
        if self._conn is not None:
            await self._conn.execute(SQL["release"], self.key)
            self._conn = None
            await self._stack.aclose()

    async def __aexit__(self, *exc) -> None:
        await self.release()
