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
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class _Statement:
    sql: str
    params: dict
    future: asyncio.Future = field(repr=False)


class GroupCommit:
    """``await fetch(sql, params)``: the statement's rows once it is committed, with whatever else was queued."""

    def __init__(self, db, *, max_statements: int = 256) -> None:
        self.db = db
        self.max_statements = max_statements
        self._queue: list[_Statement] = []
        self._worker: asyncio.Task | None = None
        self.commits = 0        # telemetry: statements per commit
        self.statements = 0
        self.isolated = 0

    def stats(self) -> dict:
        return {"commits": self.commits, "statements": self.statements, "isolated": self.isolated,
                "mean_statements_per_commit": round(self.statements / self.commits, 1) if self.commits else None}

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
        async with self.db.transaction() as conn:
            async with conn.pipeline():
                cursors = [await conn.execute(s.sql, s.params) for s in statements]
            results = [await cur.fetchall() if cur.description is not None else [] for cur in cursors]
        self.commits += 1
        self.statements += len(statements)
        return results


def _settle(statement: _Statement, *, result=None, exc: BaseException | None = None) -> None:
    if statement.future.done():
        return
    if exc is not None:
        statement.future.set_exception(exc)
    else:
        statement.future.set_result(result)


__all__ = ["GroupCommit"]
