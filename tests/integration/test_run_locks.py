"""Every run's advisory lock on one session per process (edgeindex.run_locks), against the real Postgres."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from edgeindex.errors import Conflict
from edgeindex.workflow import Workflow, WorkflowBinding

LOCKS_OF_RUNS = """SELECT count(*) AS n FROM pg_locks l
                   WHERE l.locktype = 'advisory' AND l.granted
                     AND ((l.classid::bigint << 32) | l.objid::bigint) = ANY(%(keys)s)"""
RUN_KEY = "SELECT hashtextextended('workflow:' || %(id)s, 0) AS key"


def gated(gate: asyncio.Event, arrived: list[str]) -> type[Workflow]:
    class Gated(Workflow):
        async def run(self, event, step):
            async def wait():
                arrived.append(event["n"])
                await gate.wait()
                return event["n"]

            return await step.do("wait", wait)

    return Gated


async def lock_keys(db, run_ids: list[str]) -> list[int]:
    # pg_locks shows a bigint advisory key as (classid: high 32 bits, objid: low 32 bits): LOCKS_OF_RUNS
    # puts them back together, bit for bit
    return [(await db.fetchone(RUN_KEY, {"id": r}))["key"] for r in run_ids]


async def held(db, keys: list[int]) -> int:
    return (await db.fetchone(LOCKS_OF_RUNS, {"keys": keys}))["n"]


async def test_runs_in_flight_are_not_bounded_by_the_pool(db):
    gate, arrived = asyncio.Event(), []
    binding = WorkflowBinding(db, gated(gate, arrived), name="gated")
    binding.provide(None)
    runs = [f"run-{uuid.uuid4()}" for _ in range(5 * db.pool.max_size)]  # the pool holds 4 connections
    tasks = [asyncio.create_task(binding.create(id=r, params={"n": i})) for i, r in enumerate(runs)]
    try:
        for _ in range(200):  # every run reaches its step while all the others still hold their lock
            if len(arrived) == len(runs):
                break
            await asyncio.sleep(0.05)
        assert sorted(arrived) == list(range(len(runs)))
        assert binding.locks.held == len(runs)
        assert binding.locks.sessions == 1  # one session holds them all
    finally:
        gate.set()
    assert [s.output for s in await asyncio.gather(*tasks)] == list(range(len(runs)))
    assert binding.locks.held == 0


async def test_a_run_locked_by_another_session_is_refused_until_that_session_ends(db, stack):
    gate, arrived = asyncio.Event(), []
    binding = WorkflowBinding(db, gated(gate, arrived), name="gated")
    binding.provide(None)
    run_id = f"run-{uuid.uuid4()}"
    # another process's lock session: the same lock, taken the way every process takes it
    other = await psycopg.AsyncConnection.connect(stack.dsn, autocommit=True)
    try:
        await other.execute("SELECT pg_advisory_lock(hashtextextended('workflow:' || %s, 0))", (run_id,))
        refused = asyncio.create_task(binding.create(id=run_id, params={"n": 1}))
        for _ in range(200):  # refused at once, or (wrongly) running its step: bounded either way
            if refused.done() or arrived:
                break
            await asyncio.sleep(0.05)
        gate.set()
        with pytest.raises(Conflict):
            await refused
    finally:
        await other.close()  # that process dies: Postgres drops its locks with the session
    keys = await lock_keys(db, [run_id])
    for _ in range(100):  # the backend notices the closed socket and exits: poll, bounded
        if await held(db, keys) == 0:
            break
        await asyncio.sleep(0.05)
    assert (await binding.create(id=run_id, params={"n": 1})).status == "complete"
    assert arrived == [1]  # it ran once, after the other session let go


async def test_the_lock_session_goes_back_to_the_pool_holding_nothing(db):
    gate, arrived = asyncio.Event(), []
    binding = WorkflowBinding(db, gated(gate, arrived), name="gated")
    binding.provide(None)
    runs = [f"run-{uuid.uuid4()}" for _ in range(3)]
    keys = await lock_keys(db, runs)
    tasks = [asyncio.create_task(binding.create(id=r, params={"n": i})) for i, r in enumerate(runs)]
    for _ in range(200):
        if len(arrived) == len(runs):
            break
        await asyncio.sleep(0.05)
    assert await held(db, keys) == len(runs)  # taken in Postgres, not only in this process
    gate.set()
    await asyncio.gather(*tasks)
    assert await held(db, keys) == 0
    assert binding.locks._conn is None  # given back to the pool once no run holds a lock


async def until(done, bound: int = 200) -> None:
    """Poll ``done()`` every 50 ms, at most ``bound`` times (the assertions after it say what was reached)."""
    for _ in range(bound):
        if done():
            return
        await asyncio.sleep(0.05)


async def a_run_whose_lock_session_is_lost(db):
    """A gated run in flight, then its process's lock session killed (Postgres restarted, say)."""
    gate, arrived = asyncio.Event(), []
    binding = WorkflowBinding(db, gated(gate, arrived), name="gated")
    binding.provide(None)
    first = f"run-{uuid.uuid4()}"
    task = asyncio.create_task(binding.create(id=first, params={"n": 1}))
    await until(lambda: arrived)
    pid = binding.locks._conn.info.backend_pid
    await db.execute("SELECT pg_terminate_backend(%(pid)s)", {"pid": pid})
    return binding, gate, arrived, first, task


async def test_a_lost_lock_session_does_not_fail_its_runs_and_a_new_one_is_opened(db):
    binding, gate, _, _, task = await a_run_whose_lock_session_is_lost(db)
    gate.set()
    assert (await task).status == "complete"  # its unlock found the session gone: nothing to release
    second = f"run-{uuid.uuid4()}"
    assert (await binding.create(id=second, params={"n": 2})).status == "complete"
    assert binding.locks.sessions == 2 and binding.locks.held == 0


async def test_a_run_in_flight_when_its_session_was_lost_is_still_refused_in_this_process(db):
    binding, gate, arrived, first, task = await a_run_whose_lock_session_is_lost(db)
    second = f"run-{uuid.uuid4()}"
    other = asyncio.create_task(binding.create(id=second, params={"n": 2}))  # finds the session gone
    await until(lambda: len(arrived) == 2)
    assert binding.locks.sessions == 2
    # a new session would grant the first run's lock again: this process must refuse it by itself
    again = asyncio.create_task(binding.create(id=first, params={"n": 3}))
    await until(lambda: again.done() or len(arrived) == 3)
    gate.set()
    with pytest.raises(Conflict):
        await again
    assert [(await task).status, (await other).status] == ["complete", "complete"]
    assert binding.locks.held == 0 and arrived == [1, 2]


async def test_locks_and_unlocks_asked_together_go_in_one_round_trip(db):
    from edgeindex.run_locks import RunLocks

    locks = RunLocks(db.pool)
    runs = [f"run-{uuid.uuid4()}" for _ in range(10)]
    keys = await lock_keys(db, runs)
    # a queue batch's runs start together; the two repeated ones are refused by this process itself
    assert await asyncio.gather(*(locks.try_lock(r) for r in runs + runs[:2])) == [True] * 10 + [False] * 2
    assert locks.round_trips == 1 and locks.held == 10
    assert await held(db, keys) == 10
    await asyncio.gather(*(locks.unlock(r) for r in runs))  # a group commit's runs finish together
    assert locks.round_trips == 2 and locks.held == 0
    assert await held(db, keys) == 0
    assert locks._conn is None
