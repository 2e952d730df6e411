"""A small durable step engine (Cloudflare Workflows-like) checkpointed in Postgres.

A workflow is a class with ``async def run(self, event, step)``. Inside it,
``await step.do("name", fn)`` runs ``fn`` once: its JSON-serializable result is
stored under (run id, step name) and a later run of the same id returns the
stored result instead of running ``fn`` again. A run killed anywhere therefore
resumes from the last completed step when its message is redelivered.

Retries live here, not in steps: each step has a RetryPolicy, applied by a plain loop
(tenacity's machinery per step cost more than most steps). Errors that say retrying cannot
help (``IngestError``, ``Conflict``) fail at once and propagate as themselves; anything else
that outlives the policy becomes ``StepFailed`` carrying every attempt's error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import sqlfiles
from .bindings.database import Database
from .errors import ConfigError, Conflict, EdgeIndexError, IngestError, ReplayMismatch, RunDeleted, StepFailed
from .run_locks import RunLocks
from .workflow_writes import GroupCommit, Merge

log = logging.getLogger(__name__)
SQL = sqlfiles.load("workflow.sql")


# The engine's statements as one statement per group commit (workflow_writes.Merge): ~16 per document otherwise.
ENGINE_MERGES = {SQL["start_run"]: Merge(SQL["start_runs"], key="id"),
                 SQL["set_current_step"]: Merge(SQL["set_current_steps"]),
                 SQL["record_step"]: Merge(SQL["record_steps"]),
                 SQL["finish_run"]: Merge(SQL["finish_runs"])}


@dataclass(frozen=True)
class RetryPolicy:
    limit: int = 3          # attempts in all, first included
    delay: float = 0.5      # seconds before the second attempt
    backoff: float = 2.0    # multiplier per further attempt
    max_delay: float = 10.0


@dataclass(frozen=True)
class RunStatus:
    id: str
    status: str             # running | complete | errored
    current_step: str | None
    error: str | None
    output: Any = None
    steps: tuple[str, ...] = ()


class Step:
    """Handed to ``Workflow.run``; records and replays step results."""

    def __init__(self, db: Database | GroupCommit, run_id: str, completed: dict[str, Any]) -> None:
        self.db = db  # where the engine's statements go: the database, or its process's GroupCommit
        self.run_id = run_id
        self.completed = completed           # in the order they were recorded
        self.recorded = list(completed)
        self.executed: list[str] = []  # steps that really ran in this invocation
        self._seq = len(completed)
        self._calls = 0

    async def do(self, name: str, fn: Callable[[], Awaitable[Any]], *, retries: RetryPolicy | None = None) -> Any:
        # A replay must ask for the recorded steps in the recorded order: anything else means the
        # workflow's code or inputs changed under a run in flight, and replaying would mix them.
        name = str(name)  # a StrEnum's value: what is stored, replayed and compared
        position = self._calls
        self._calls += 1
        if position < len(self.recorded) and self.recorded[position] != name:
            raise ReplayMismatch(f"run {self.run_id}: step {position + 1} is {name!r} now but "
                                 f"{self.recorded[position]!r} was recorded")
        if name in self.completed:
            return self.completed[name]
        policy = retries or RetryPolicy()
        await self.db.execute(SQL["set_current_step"], {"id": self.run_id, "step": name})
        errors: list[BaseException] = []
        attempts = 0
        started = time.perf_counter()
        # The retry loop by hand, not tenacity's AsyncRetrying: almost every step succeeds at its
        # first attempt, and entering tenacity's machinery for each of them costs the event loop
        # more than the step's own Python. Same schedule: policy.delay x backoff^(n-1), capped.
        while True:
            attempts += 1
            try:
                result = await fn()
                break
            except (IngestError, Conflict):
                raise  # retrying cannot help: fails at once, as itself
            except Exception as exc:
                errors.append(exc)
                if attempts >= policy.limit:
                    raise StepFailed(name, errors) from exc
            await asyncio.sleep(min(policy.max_delay, policy.delay * policy.backoff ** (attempts - 1)))
        # The output must survive a JSON round trip: replay hands back exactly that. Encoded once:
        # the same text is what the checkpoint stores.
        encoded = json.dumps(result)
        stored = json.loads(encoded)
        self._seq += 1
        try:
            await self.db.execute(SQL["record_step"], {"run": self.run_id, "name": name, "seq": self._seq,
                                                       "output": Jsonb(stored, dumps=lambda _: encoded),
                                                       "attempts": attempts})
        except psycopg.errors.ForeignKeyViolation:
            # Whoever owns the run deleted it meanwhile (a document deleted during its ingestion):
            # nothing more of it may run, and retrying cannot bring it back.
            raise RunDeleted(f"run {self.run_id} was deleted while step {name!r} ran") from None
        self.completed[name] = stored
        self.executed.append(name)
        log.debug("run %s step %s done in %.1f ms (%d attempt(s))", self.run_id, name,
                  (time.perf_counter() - started) * 1000, attempts)
        return stored


class Workflow:
    """Subclass and implement ``run``. ``service`` is what the worker's start-up provided to the
    binding (``WorkflowBinding.provide``): the steps' dependencies, typed, never the raw env."""

    def __init__(self, service: Any) -> None:
        self.service = service

    async def run(self, event: dict, step: Step) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


_NOT_PROVIDED = object()


class WorkflowBinding:
    """``env.INGEST_WORKFLOW``: ``await create(id=..., params=...)`` runs (or resumes) a run here."""

    def __init__(self, db: Database, workflow_cls: type[Workflow], *, name: str) -> None:
        self.db = db
        self.workflow_cls = workflow_cls
        self.name = name
        self.service: Any = _NOT_PROVIDED
        self.last_step: Step | None = None  # for tests and telemetry
        self.locks = RunLocks(db.pool)
        # start, step entered, checkpoint, finish: committed together with other runs' (workflow_writes.py)
        self.writes = GroupCommit(db, merges=ENGINE_MERGES)

    def provide(self, service: Any) -> None:
        """What each run's workflow object receives (the worker's start-up calls this once)."""
        self.service = service

    async def create(self, *, id: str, params: dict) -> RunStatus:
        # One runner per run id at a time, across processes (a message whose visibility timeout
        # lapsed may be delivered twice). Every run's lock sits on one session of this process
        # (run_locks.py), so runs in flight are not bounded by the pool.
        if not await self.locks.try_lock(id):
            raise Conflict(f"workflow run {id} is already running elsewhere")
        try:
            return await self._run(id, params)
        finally:
            await self.locks.unlock(id)

    async def _run(self, id: str, params: dict) -> RunStatus:
        writes = self.writes
        row = await writes.fetchone(SQL["start_run"], {"id": id, "workflow": self.name, "params": Jsonb(params)})
        if row["status"] == "complete":
            return await self.get(id)
        completed: dict[str, Any] = {}
        if row["attempts"] > 1:  # a new run (its row was just inserted) has no checkpoints to read
            completed = {r["name"]: r["output"] for r in await self.db.fetch(SQL["completed_steps"], {"run": id})}
        step = Step(writes, id, completed)
        self.last_step = step
        try:
            if self.service is _NOT_PROVIDED:
                raise ConfigError(f"workflow {self.name}: nothing was provided to run it with "
                                  "(the worker's startup must call provide())")
            output = await self.workflow_cls(self.service).run(params, step)
        except Exception as exc:
            message = exc.message if isinstance(exc, EdgeIndexError) else f"{type(exc).__name__}: {exc}"
            await writes.execute(SQL["finish_run"], {"id": id, "status": "errored", "error": message})
            raise
        await writes.execute(SQL["finish_run"], {"id": id, "status": "complete", "error": None})
        return RunStatus(id, "complete", None, None, output, tuple(completed))

    async def get(self, id: str) -> RunStatus | None:
        row = await self.db.fetchone(SQL["get_run"], {"id": id})
        if row is None:
            return None
        steps = [r["name"] for r in await self.db.fetch(SQL["completed_steps"], {"run": id})]
        return RunStatus(id, row["status"], row["current_step"], row["error"], None, tuple(steps))

    def describe(self) -> dict:
        return {"type": "workflow", "name": self.name,
                "class_name": f"{self.workflow_cls.__module__}.{self.workflow_cls.__qualname__}"}
