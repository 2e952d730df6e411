"""The advisory locks of every workflow run in flight in a process, held on ONE database session.

One runner per run id, across processes, is a session-level advisory lock (a message whose
visibility timeout lapsed may be delivered to a second consumer while the first still runs it).
Held on a pooled connection per run, the lock would cost a connection for the run's whole life:
runs in flight would be capped by the pool (and by Postgres's ``max_connections``, shared by every
process). ``RunLocks`` holds them all on one session instead, taken from the pool when the first
run starts and given back when the last one ends; its statements are serialised (a connection runs
one at a time), each a single round trip.

What the lock promises does not change:
- a run another process holds is refused (``pg_try_advisory_lock`` is false);
- a run this process already holds is refused here, before Postgres is asked: advisory locks are
  re-entrant within a session, so the session alone would let the same process run it twice;
- a crash releases everything: the session ends with the process, and Postgres drops its locks.

If the session is lost (Postgres restarted, the connection cut), its locks are gone with it: the
runs in flight go on (their steps are idempotent and the upsert locks its documents), this process
still refuses to start any of them a second time, an unlock of a lock the lost session held is a
no-op, and the next lock opens a new session.
"""

from __future__ import annotations

import asyncio
import logging

import psycopg
from psycopg_pool import AsyncConnectionPool

from . import sqlfiles

log = logging.getLogger(__name__)
SQL = sqlfiles.load("workflow.sql")


class RunLocks:
    """``try_lock(id)`` / ``unlock(id)`` for the runs of one process, on one shared session."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self._conn: psycopg.AsyncConnection | None = None
        self._session = 0            # bumped whenever a new session is taken: which locks it holds
        self._held: dict[str, int] = {}  # run id -> the session its lock was taken on
        self._mutex = asyncio.Lock()  # one statement at a time on the session
        self.sessions = 0            # sessions taken from the pool (telemetry and tests)

    @property
    def held(self) -> int:
        return len(self._held)

    async def try_lock(self, run_id: str) -> bool:
        async with self._mutex:
            if run_id in self._held:  # re-entrant within the session: refuse it here
                return False
            for attempt in (1, 2):
                conn = await self._session_conn()
                try:
                    cur = await conn.execute(SQL["try_lock"], {"id": run_id})
                    locked = bool((await cur.fetchone())["locked"])
                except psycopg.OperationalError:
                    # The session is gone and its locks with it; a new session may lock the run again.
                    await self._drop_session()
                    if attempt == 2:
                        raise
                    continue
                if locked:
                    self._held[run_id] = self._session
                else:
                    await self._release_if_idle()
                return locked
        return False  # pragma: no cover - the loop returns or raises

    async def unlock(self, run_id: str) -> None:
        async with self._mutex:
            session = self._held.pop(run_id, None)
            if session is None:
                return
            if session == self._session and self._conn is not None:
                try:
                    await self._conn.execute(SQL["unlock"], {"id": run_id})
                except psycopg.OperationalError:
                    await self._drop_session()  # its locks went with it
            await self._release_if_idle()

    async def _session_conn(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await self.pool.getconn()
            await self._conn.set_autocommit(True)  # each lock is its own statement, never a transaction
            self._session += 1
            self.sessions += 1
        return self._conn

    async def _drop_session(self) -> None:
        conn, self._conn = self._conn, None
        # Every lock taken on it went with it, but its runs are still in flight here: they stay in
        # ``_held`` (so this process still refuses to start them twice) with the old session's number
        # (so their unlock sends nothing, and they do not keep the next session from going back).
        if conn is not None:
            await self.pool.putconn(conn)  # the pool discards a broken connection

    async def _release_if_idle(self) -> None:
        """Give the session back to the pool once no run holds a lock on it (never with a lock held:
        a pooled connection must not carry one to its next user)."""
        if self._conn is not None and not any(s == self._session for s in self._held.values()):
            conn, self._conn = self._conn, None
            try:
                await conn.set_autocommit(False)  # as the pool hands connections out
            except psycopg.Error:
                pass
            await self.pool.putconn(conn)
