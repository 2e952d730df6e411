"""The step engine's group commit (``edgeindex.workflow_writes``) against the real Postgres: statements of
concurrent runs share a transaction, each caller returns after its own commit, and a statement that fails
fails alone while the others of its group are committed."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from edgeindex import sqlfiles
from edgeindex.workflow_writes import GroupCommit
from psycopg.types.json import Jsonb

SQL = sqlfiles.load("workflow.sql")


def _start(run_id: str) -> tuple[str, dict]:
    return SQL["start_run"], {"id": run_id, "workflow": "group-commit-test", "params": Jsonb({})}


def _checkpoint(run_id: str, name: str = "a") -> tuple[str, dict]:
    return SQL["record_step"], {"run": run_id, "name": name, "seq": 1, "output": Jsonb({"ok": True}), "attempts": 1}


async def test_concurrent_statements_share_commits_and_each_is_committed_when_awaited(db):
    writes = GroupCommit(db)
    runs = [f"gc-{uuid.uuid4()}" for _ in range(20)]
    started = await asyncio.gather(*(writes.fetchone(*_start(r)) for r in runs))
    assert [(s["status"], s["attempts"]) for s in started] == [("running", 1)] * 20
    assert writes.statements == 20 and writes.commits < 20  # shared transactions

    async def checkpoint_then_look(run_id: str) -> int:
        await writes.execute(*_checkpoint(run_id))
        # Awaited means committed: another session sees it at once.
        row = await db.fetchone("SELECT count(*) AS n FROM workflow_steps WHERE run_id = %s", (run_id,))
        return row["n"]

    assert await asyncio.gather(*(checkpoint_then_look(r) for r in runs)) == [1] * 20


async def test_a_failing_statement_fails_alone_and_the_rest_of_its_group_commits(db):
    writes = GroupCommit(db)
    runs = [f"gc-{uuid.uuid4()}" for _ in range(6)]
    await asyncio.gather(*(writes.fetchone(*_start(r)) for r in runs))
    gone = f"gc-gone-{uuid.uuid4()}"  # no such run: its checkpoint breaks the foreign key
    outcomes = await asyncio.gather(*(writes.execute(*_checkpoint(r)) for r in runs[:3]),
                                    writes.execute(*_checkpoint(gone)),
                                    *(writes.execute(*_checkpoint(r)) for r in runs[3:]), return_exceptions=True)
    assert [type(o) for o in outcomes] == [type(None)] * 3 + [psycopg.errors.ForeignKeyViolation] + [type(None)] * 3
    assert writes.isolated == 1  # the group was tried together, then statement by statement
    stored = await db.fetch("SELECT run_id FROM workflow_steps WHERE run_id = ANY(%s)", (runs + [gone],))
    assert sorted(r["run_id"] for r in stored) == sorted(runs)


async def test_a_lone_statement_that_fails_raises_its_own_error(db):
    writes = GroupCommit(db)
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        await writes.execute(*_checkpoint(f"gc-gone-{uuid.uuid4()}"))
