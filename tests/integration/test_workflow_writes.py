"""The step engine's group commit (``edgeindex.workflow_writes``) against the real Postgres: statements of
concurrent runs share a transaction, each caller returns after its own commit, a statement that fails
fails alone while the others of its group are committed, and statements of one kind in a group go to
Postgres as one (the engine's merges) while each caller still gets exactly its own statement's rows."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from edgeindex import sqlfiles
from edgeindex.workflow import ENGINE_MERGES
from edgeindex.workflow_writes import GroupCommit
from psycopg.types.json import Jsonb

SQL = sqlfiles.load("workflow.sql")


def _start(run_id: str) -> tuple[str, dict]:
    return SQL["start_run"], {"id": run_id, "workflow": "group-commit-test", "params": Jsonb({})}


def _checkpoint(run_id: str, name: str = "a", output=None) -> tuple[str, dict]:
    return SQL["record_step"], {"run": run_id, "name": name, "seq": 1, "output": Jsonb(output or {"ok": True}),
                                "attempts": 1}


MERGED = pytest.mark.parametrize("merges", [None, ENGINE_MERGES], ids=["alone", "merged"])


@MERGED
async def test_concurrent_statements_share_commits_and_each_is_committed_when_awaited(db, merges):
    writes = GroupCommit(db, merges=merges)
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


@MERGED
async def test_a_failing_statement_fails_alone_and_the_rest_of_its_group_commits(db, merges):
    writes = GroupCommit(db, merges=merges)
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


@MERGED
async def test_a_lone_statement_that_fails_raises_its_own_error(db, merges):
    writes = GroupCommit(db, merges=merges)
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        await writes.execute(*_checkpoint(f"gc-gone-{uuid.uuid4()}"))


async def test_merged_statements_are_one_per_kind_and_each_caller_gets_its_own_run_s_rows(db):
    writes = GroupCommit(db, merges=ENGINE_MERGES)
    runs = [f"gc-{uuid.uuid4()}" for _ in range(12)]
    await asyncio.gather(*(writes.fetchone(*_start(r)) for r in runs[:4]))  # these four start a second time
    before = (writes.statements, writes.sent, writes.commits)
    started = await asyncio.gather(*(writes.fetchone(*_start(r)) for r in reversed(runs)))
    # Each caller's row is its own run's, in the single statement's shape (no merge key left in it).
    assert started == [{"status": "running", "attempts": 2 if r in runs[:4] else 1} for r in reversed(runs)]
    assert writes.statements - before[0] == 12
    assert writes.sent - before[1] == writes.commits - before[2]  # one statement per commit: all one kind

    await asyncio.gather(*(writes.execute(SQL["set_current_step"], {"id": r, "step": f"step-{i}"})
                           for i, r in enumerate(runs)))
    await asyncio.gather(*(writes.execute(*_checkpoint(r, name=f"step-{i}", output={"n": i}))
                           for i, r in enumerate(runs)))
    await asyncio.gather(*(writes.execute(SQL["finish_run"], {"id": r, "status": "errored" if i % 3 else "complete",
                                                              "error": f"e{i}" if i % 3 else None})
                           for i, r in enumerate(runs)))
    assert writes.sent < writes.statements  # statements of one kind went together
    stored = {r["run_id"]: (r["name"], r["output"]) for r in
              await db.fetch("SELECT run_id, name, output FROM workflow_steps WHERE run_id = ANY(%s)", (runs,))}
    assert stored == {r: (f"step-{i}", {"n": i}) for i, r in enumerate(runs)}
    finished = {r["id"]: (r["status"], r["current_step"], r["error"]) for r in
                await db.fetch("SELECT id, status, current_step, error FROM workflow_runs WHERE id = ANY(%s)", (runs,))}
    assert finished == {r: ("errored", f"step-{i}", f"e{i}") if i % 3 else ("complete", None, None)
                        for i, r in enumerate(runs)}
