"""The advisory locks of every workflow run in flight in a process, held on ONE database session.

One runner per run id, across processes, is a session-level advisory lock (a message whose
visibility timeout lapsed may be delivered to a second consumer while the first still runs it).
Held on a pooled connection per run, the lock would cost a connection for the run's whole life:
runs in flight would be capped by the pool (and by Postgres's ``max_connections``, shared by every
process). ``RunLocks`` holds them all on one session instead, taken from the pool when the first
run starts and given back when the last one ends; its round trips are serialised (a connection runs
one statement at a time), and what several runs ask meanwhile goes in one.

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
from .bindings.database import Connection

log = logging.getLogger(__name__)
SQL = sqlfiles.load("workflow.sql")


class _Ask:
    """A run's lock (``take``) or unlock, waiting for its round."""

    __slots__ = ("run_id", "take", "future")

    def __init__(self, run_id: str, take: bool) -> None:
        self.run_id = run_id
        self.take = take
        self.future = asyncio.get_running_loop().create_future()


class RunLocks:
    """``try_lock(id)`` / ``unlock(id)`` for the runs of one process, on one shared session.

    What is asked while a round trip is in flight goes in the next one, together (``lock_and_unlock``: one
    statement, in the order asked): runs start a queue batch at a time and finish a group commit at a time,
    so most rounds carry several runs' locks or unlocks instead of one statement each."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self._conn: Connection | None = None
        self._session = 0            # bumped whenever a new session is taken: which locks it holds
        self._held: dict[str, int] = {}  # run id -> the session its lock was taken on
        self._asked: list[_Ask] = []
        self._rounds: asyncio.Task | None = None  # one round at a time on the session
        self.sessions = 0            # sessions taken from the pool (telemetry and tests)
        self.round_trips = 0         # statements sent (telemetry and tests)

    @property
    def held(self) -> int:
        return len(self._held)

    async def try_lock(self, run_id: str) -> bool:
        return await self._ask(_Ask(run_id, True))

    async def unlock(self, run_id: str) -> None:
        await self._ask(_Ask(run_id, False))

    async def _ask(self, ask: _Ask):
        self._asked.append(ask)
        if self._rounds is None or self._rounds.done():
            self._rounds = asyncio.create_task(self._run_rounds())
        return await ask.future

    async def _run_rounds(self) -> None:
        await asyncio.sleep(0)  # what runs woken in this turn ask goes together
        while self._asked:
            asked, self._asked = self._asked, []
            try:
                await self._round(asked)
            except BaseException as exc:
                for ask in asked:
                    if not ask.future.done():
                        ask.future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise

    async def _round(self, asked: list[_Ask]) -> None:
        # What this process decides alone, in the order asked: a run it holds (or takes earlier in this
        # round) is refused here, since advisory locks are re-entrant within a session; an unlock of a run
        # it does not hold, or one held on a session since lost, sends nothing.
        taking: list[_Ask] = []
        taking_ids: set[str] = set()
        releasing: list[_Ask] = []
        sends: list[tuple[str, bool]] = []
        for ask in asked:
            if ask.take:
                if ask.run_id in self._held or ask.run_id in taking_ids:
                    ask.future.set_result(False)
                else:
                    taking.append(ask)
                    taking_ids.add(ask.run_id)
                    sends.append((ask.run_id, True))
            else:
                releasing.append(ask)
                session = self._held.pop(ask.run_id, None)
                if session is not None and session == self._session and self._conn is not None:
                    sends.append((ask.run_id, False))
        try:
            taken = await self._send(sends, taking) if sends else {}
        finally:
            for ask in releasing:  # an unlock returns once sent (a lost session released it anyway)
                ask.future.set_result(None)
        for ask in taking:
            if taken[ask.run_id]:
                self._held[ask.run_id] = self._session
            ask.future.set_result(taken[ask.run_id])
        await self._release_if_idle()

    async def _send(self, sends: list[tuple[str, bool]], taking: list[_Ask]) -> dict[str, bool]:
        """One statement for the round; whether each lock asked was taken."""
        for attempt in (1, 2):
            conn = await self._session_conn()
            try:
                cur = await conn.execute(SQL["lock_and_unlock"], {"id": [r for r, _ in sends],
                                                                  "take": [t for _, t in sends]})
                done = [bool(row["done"]) for row in await cur.fetchall()]
                self.round_trips += 1
            except psycopg.OperationalError:
                # The session is gone and its locks with it (the unlocks have nothing left to release);
                # a new session may take the locks asked again.
                await self._drop_session()
                if not taking:
                    return {}
                if attempt == 2:
                    raise
                sends = [(a.run_id, True) for a in taking]
                continue
            return {run_id: ok for (run_id, take), ok in zip(sends, done, strict=True) if take}
        return {}  # pragma: no cover - the loop returns or raises

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
