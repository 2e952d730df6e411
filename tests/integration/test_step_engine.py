"""The durable step engine against the real Postgres: replay, retries, failure, locking."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from edgeindex.errors import Conflict, IngestError, ReplayMismatch, StepFailed
from edgeindex.workflow import RetryPolicy, Workflow, WorkflowBinding

FAST = RetryPolicy(limit=3, delay=0.01, max_delay=0.02)


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so nothing records a failure."""


class ThreeSteps(Workflow):
    calls: dict[str, int] = {}
    crash_after: str | None = None
    flaky_failures = 0

    async def run(self, event, step):
        async def count(name, value):
            ThreeSteps.calls[name] = ThreeSteps.calls.get(name, 0) + 1
            return value

        a = await step.do("a", lambda: count("a", {"n": event["n"]}), retries=FAST)
        if ThreeSteps.crash_after == "a":
            raise Crash()

        async def flaky():
            ThreeSteps.calls["b"] = ThreeSteps.calls.get("b", 0) + 1
            if ThreeSteps.flaky_failures > 0:
                ThreeSteps.flaky_failures -= 1
                raise ConnectionError("transient")
            return a["n"] * 2

        b = await step.do("b", flaky, retries=FAST)
        c = await step.do("c", lambda: count("c", b + 1), retries=FAST)
        return c


@pytest.fixture
def workflow(db):
    ThreeSteps.calls = {}
    ThreeSteps.crash_after = None
    ThreeSteps.flaky_failures = 0
    binding = WorkflowBinding(db, ThreeSteps, name="three-steps")
    binding.provide(None)  # its steps need nothing
    return binding


async def test_stopped_run_resumes_without_rerunning_completed_steps(workflow):
    run_id = f"run-{uuid.uuid4()}"
    ThreeSteps.crash_after = "a"
    with pytest.raises(Crash):
        await workflow.create(id=run_id, params={"n": 5})
    assert ThreeSteps.calls == {"a": 1}
    status = await workflow.get(run_id)
    assert status.status == "running" and status.steps == ("a",)

    ThreeSteps.crash_after = None
    result = await workflow.create(id=run_id, params={"n": 5})
    assert result.status == "complete" and result.output == 11
    assert ThreeSteps.calls == {"a": 1, "b": 1, "c": 1}  # "a" was replayed, not run
    assert workflow.last_step.executed == ["b", "c"]


async def test_a_replay_that_asks_for_other_steps_than_recorded_is_an_error(workflow, db):
    run_id = f"run-{uuid.uuid4()}"
    ThreeSteps.crash_after = "a"
    with pytest.raises(Crash):
        await workflow.create(id=run_id, params={"n": 5})

    class Reordered(Workflow):  # the same run id, replayed by code whose first step is another one
        async def run(self, event, step):
            return await step.do("b", lambda: asyncio.sleep(0, 1), retries=FAST)

    other = WorkflowBinding(db, Reordered, name="three-steps")
    other.provide(None)
    with pytest.raises(ReplayMismatch, match="'b' now but 'a' was recorded"):
        await other.create(id=run_id, params={"n": 5})
    assert (await other.get(run_id)).status == "errored"


async def test_completed_run_is_not_run_again(workflow):
    run_id = f"run-{uuid.uuid4()}"
    await workflow.create(id=run_id, params={"n": 1})
    await workflow.create(id=run_id, params={"n": 1})
    assert ThreeSteps.calls == {"a": 1, "b": 1, "c": 1}


async def test_transient_failures_are_retried_with_the_policy(workflow, db):
    run_id = f"run-{uuid.uuid4()}"
    ThreeSteps.flaky_failures = 2
    result = await workflow.create(id=run_id, params={"n": 2})
    assert result.output == 5
    row = await db.fetchone("SELECT attempts FROM workflow_steps WHERE run_id = %s AND name = 'b'", (run_id,))
    assert row["attempts"] == 3


async def test_step_failing_past_its_retries_errors_the_run(workflow):
    run_id = f"run-{uuid.uuid4()}"
    ThreeSteps.flaky_failures = 10
    with pytest.raises(StepFailed) as err:
        await workflow.create(id=run_id, params={"n": 2})
    assert err.value.step == "b" and len(err.value.errors) == 3
    assert all(isinstance(e, ConnectionError) for e in err.value.errors)
    status = await workflow.get(run_id)
    assert status.status == "errored" and "transient" in status.error and status.steps == ("a",)


async def test_permanent_errors_are_not_retried(db):
    attempts = []

    class Bad(Workflow):
        async def run(self, event, step):
            async def fail():
                attempts.append(1)
                raise IngestError("file is empty")

            await step.do("extract", fail, retries=FAST)

    binding = WorkflowBinding(db, Bad, name="bad")
    binding.provide(None)
    run_id = f"run-{uuid.uuid4()}"
    with pytest.raises(IngestError):  # raised as itself, so callers can tell permanent from transient
        await binding.create(id=run_id, params={})
    assert len(attempts) == 1
    status = await binding.get(run_id)
    assert status.status == "errored" and status.error == "file is empty"


async def test_one_runner_per_run_id(db):
    gate = asyncio.Event()

    class Slow(Workflow):
        async def run(self, event, step):
            async def wait():
                await gate.wait()
                return 1

            return await step.do("wait", wait)

    binding = WorkflowBinding(db, Slow, name="slow")
    binding.provide(None)
    run_id = f"run-{uuid.uuid4()}"
    first = asyncio.create_task(binding.create(id=run_id, params={}))
    await asyncio.sleep(0.2)
    with pytest.raises(Conflict):
        await binding.create(id=run_id, params={})
    gate.set()
    assert (await first).status == "complete"


async def test_outputs_must_be_json(workflow, db):
    class NotJson(Workflow):
        async def run(self, event, step):
            async def produce():
                return object()

            return await step.do("x", produce, retries=RetryPolicy(limit=1))

    binding = WorkflowBinding(db, NotJson, name="not-json")
    binding.provide(None)
    with pytest.raises(TypeError):
        await binding.create(id=f"run-{uuid.uuid4()}", params={})
