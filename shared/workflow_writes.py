"""The step engine's own statements, committed together across the runs in flight (group commit).

Every run costs the engine a statement to start, two per step (the step entered, its checkpoint)
and one to finish: with a hundred runs in flight in an ingest process that is most of its
commits, each its own pooled connection, round trip and WAL flush. ``GroupCommit`` takes the
statements that arrive while a commit is in flight (no timer: a lone statement is not delayed),
pipelines them in ONE transaction, and answers each caller after that commit.

Durability stays per run: a caller's ``await`` returns only once its statement is committed, and
a run awaits each statement before it issues the next, so its own statements keep their order and
a crash between two steps still finds the last step entered (``set_current_step``) and every
checkpoint written before it. Statements of different runs touch different rows. If a grouped
transaction fails (a run deleted under its checkpoint, a lock timeout), nothing of it is kept and
each statement is run again alone, in order: the one that fails gets its own error, the others
commit, as with a poison document in a shared model call.

Statements of one kind in a group are sent as ONE statement (``Merge``: the same statement over arrays,
one element per run, ``unnest``), so a group of a hundred runs' checkpoints is one INSERT, not a
hundred: the engine's ~16 statements per document cost Postgres and psycopg a parse, a plan and a
round trip each (unmerged, a sizeable share of the ingest worker's CPU beside the model). What each
caller gets back is what its own statement would have returned; durability is the group's transaction.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Merge:
    """The many-run form of a statement: ``sql`` takes each parameter of the single form as an array (one
    element per statement, in order). A statement that returns rows names ``key``: the parameter whose
    value comes back as the column ``_key`` of each returned row, which tells whose row it is."""

    sql: str
    key: str | None = None


@dataclass
class _Statement:
    sql: str
    params: dict
    future: asyncio.Future = field(repr=False)


class GroupCommit:
    """``await fetch(sql, params)``: the statement's rows once it is committed, with whatever else was queued."""

    def __init__(self, db, *, max_statements: int = 256, merges: dict[str, Merge] | None = None) -> None:
        self.db = db
        self.max_statements = max_statements
        self.merges = merges or {}  # single form's SQL -> its many-run form
        self._queue: list[_Statement] = []
        self._worker: asyncio.Task | None = None
        self.commits = 0        # telemetry: statements per commit
        self.statements = 0     # callers' statements
        self.sent = 0           # statements sent to Postgres (merged ones count once)
        self.isolated = 0

    def stats(self) -> dict:
        return {"commits": self.commits, "statements": self.statements, "sent": self.sent,
                "isolated": self.isolated,
                "mean_statements_per_commit": round(self.statements / self.commits, 1) if self.commits else None,
                "mean_sent_per_commit": round(self.sent / self.commits, 1) if self.commits else None}

    async def fetch(self, sql: str, params: dict) -> list[dict]:
        statement = _Statement(sql, params, asyncio.get_running_loop().create_future())
        self._queue.append(statement)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await statement.future

    async def fetchone(self, sql: str, params: dict) -> dict | None:
        rows = await self.fetch(sql, params)
        return rows[0] if rows else None

    async def execute(self, sql: str, params: dict) -> None:
        await self.fetch(sql, params)

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # statements of runs woken in this turn go together
        while self._queue:
            taken, self._queue = self._queue[:self.max_statements], self._queue[self.max_statements:]
            try:
                results = await self._together(taken)
            except Exception as exc:
                if len(taken) == 1:
                    _settle(taken[0], exc=exc)
                    continue
                self.isolated += 1
                log.info("a group commit of %d step-engine statements failed (%s: %s); each runs alone",
                         len(taken), type(exc).__name__, exc)
                for statement in taken:
                    try:
                        [rows] = await self._together([statement])
                        _settle(statement, result=rows)
                    except Exception as alone:
                        _settle(statement, exc=alone)
                continue
            for statement, rows in zip(taken, results, strict=True):
                _settle(statement, result=rows)

    async def _together(self, statements: list[_Statement]) -> list[list[dict]]:
        sends = self._sends(statements)
        results: list[list[dict]] = [[] for _ in statements]
        async with self.db.transaction() as conn:
            async with conn.pipeline():
                cursors = [await conn.execute(sql, params) for sql, params, _, _ in sends]
            for cur, (_, _, members, merge) in zip(cursors, sends, strict=True):
                rows = await cur.fetchall() if cur.description is not None else []
                if merge is None:
                    results[members[0]] = rows
                elif merge.key is not None:
                    mine: dict = {}
                    for row in rows:
                        key = row.pop("_key")
                        mine.setdefault(key, []).append(row)
                    for i in members:
                        results[i] = mine.get(statements[i].params[merge.key], [])
        self.commits += 1
        self.statements += len(statements)
        self.sent += len(sends)
        return results

    def _sends(self, statements: list[_Statement]) -> list[tuple[str, dict, list[int], Merge | None]]:
        """What goes to Postgres for ``statements``: (sql, params, the statements it answers, its merge).
        Statements of one mergeable kind become one, the rest go as they are; different runs' statements
        touch different rows, so the kinds' order within the transaction does not matter."""
        kinds: dict[str, list[int]] = {}
        for i, s in enumerate(statements):
            kinds.setdefault(s.sql, []).append(i)
        sends: list[tuple[str, dict, list[int], Merge | None]] = []
        for sql, members in kinds.items():
            merge = self.merges.get(sql)
            if merge is None or len(members) == 1:
                sends.extend((sql, statements[i].params, [i], None) for i in members)
            else:
                names = statements[members[0]].params.keys()
                sends.append((merge.sql, {n: [statements[i].params[n] for i in members] for n in names},
                              members, merge))
        return sends


def _settle(statement: _Statement, *, result=None, exc: BaseException | None = None) -> None:
    if statement.future.done():
        return
    if exc is not None:
        statement.future.set_exception(exc)
    else:
        statement.future.set_result(result)


__all__ = ["GroupCommit", "Merge"]
