"""Model changes asked for through the admin API and run by an ingest worker (migration 0029).

``submit`` checks a request and queues it as a job: a backfill, a migration (backfill, then
cutover), a cutover or a rollback. Each ingest worker runs a ``JobRunner``: it claims the queued
job, or one whose runner stopped renewing its lease (a worker killed mid-job), loads the job's model
and runs it with the same code as ``edgeindex models`` (backfill.py, cutover.py). A claimed backfill
goes on from the stored vectors: nothing finished is embedded again. A stop asked for ends a
backfill after the batch in hand.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from ..bindings.ai import Embedder, local_model, stored_chunks_embedder
from ..bindings.database import Database
from ..errors import BindingError, Conflict, EdgeIndexError, NotFound, ValidationError
from ..sqlfiles import load
from .backfill import DUTY, backfill, serving_model
from .cutover import cutover, entities_models, rollback_model

log = logging.getLogger(__name__)
SQL = load("models.sql")
ACTIONS = ("backfill", "migrate", "cutover", "rollback")
LEASE_SECONDS = 30.0     # a runner renews its job's lease every third of this; a killed one's job is claimed after it
POLL_SECONDS = 2.0
RECENT = 10
# Jobs running past a cancelled runner (a worker's services replaced after a cutover): kept referenced.
_running: set[asyncio.Task] = set()


def as_dict(row: dict) -> dict:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


async def submit(db: Database, action: str, model: str | None, duty: float | None,
                 entity_ids: list[str] | None = None) -> dict:
    """Queue a job, or say why not: a 400 naming the field, a 404 naming an unknown entity, or a 409."""
    if action not in ACTIONS:
        raise ValidationError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}", field="action")
    duty = DUTY if duty is None else duty
    if not 0 < duty <= 1:
        raise ValidationError("duty must be above 0 and at most 1", field="duty")
    serving, dimension = await serving_model(db)
    if entity_ids is not None:
        entity_ids = sorted(set(entity_ids))
        await entities_models(db, entity_ids)
    if action == "rollback":
        if model is not None:
            raise ValidationError("a rollback returns to the model the last cutover replaced: give no model",
                                  field="model")
        model_id = await rollback_model(db, entity_ids)
    else:
        if not model:
            raise ValidationError(f"model is required for a {action}", field="model")
        try:
            spec = local_model(model)
        except BindingError as exc:
            raise ValidationError(str(exc), field="model") from None
        model_id = spec.model_id
        if model_id == serving and (entity_ids is None or action == "backfill"):
            raise Conflict(f"{model_id!r} is the serving model already", field="model")
        if action != "backfill" and spec.dimension != dimension:
            raise Conflict(f"{model_id!r} has dimension {spec.dimension}; the chunks' vectors have {dimension}",
                           field="model")
    row = await db.fetchone(SQL["queue_job"], {"action": action, "model_id": model_id, "duty": duty,
                                               "entity_ids": entity_ids})
    if row is None:
        raise Conflict("another model job is queued or running: wait for it or stop it", field="action")
    return as_dict(row)


async def stop(db: Database, job_id: int) -> dict:
    row = await db.fetchone(SQL["stop_job"], {"id": job_id})
    if row is None:
        raise NotFound(f"no model job {job_id}", field="id")
    return as_dict(row)


async def recent(db: Database, limit: int = RECENT) -> list[dict]:
    return [as_dict(r) for r in await db.fetch(SQL["recent_jobs"], {"limit": limit})]


class JobRunner:
    """An ingest worker's background loop: claims and runs model jobs, one at a time."""

    def __init__(self, db: Database, *, poll: float = POLL_SECONDS, lease: float = LEASE_SECONDS) -> None:
        self.db, self.poll, self.lease = db, poll, lease

    async def run(self) -> None:
        while True:
            try:
                job = await self.db.fetchone(SQL["claim_job"], {"lease": self.lease})
                if job is not None:
                    task = asyncio.create_task(self.execute(job))
                    _running.add(task)
                    task.add_done_callback(_running.discard)
                    # a cancelled runner leaves its job running to the end (its record says how it ended)
                    await asyncio.shield(task)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("model jobs: claiming or running a job failed", exc_info=True)
            await asyncio.sleep(self.poll)

    async def execute(self, job: dict) -> None:
        stop = asyncio.Event()
        if job["stop_requested"]:   # asked while its last runner was lost
            stop.set()
        renewing = asyncio.create_task(self._renew(job["id"], stop))
        state, result, error = "failed", None, None
        try:
            log.info("model job %d: %s %s (claim %d)", job["id"], job["action"], job["model_id"], job["attempts"])
            embedder = await asyncio.to_thread(stored_chunks_embedder, job["model_id"])
            result = await self._do(job, embedder, stop)
            state = "stopped" if result.get("backfill", {}).get("stopped") else "done"
        except EdgeIndexError as exc:
            error = f"{exc.code}: {exc.message}"
        except Exception as exc:
            log.exception("model job %d failed", job["id"])
            error = f"unexpected: {exc.__class__.__name__}: {exc}"
        finally:
            renewing.cancel()
        await self.db.execute(SQL["finish_job"], {"id": job["id"], "state": state, "error": error,
                                                  "result": Jsonb(result) if result is not None else None})
        log.info("model job %d: %s%s", job["id"], state, f" ({error})" if error else "")

    async def _do(self, job: dict, embedder: Embedder, stop: asyncio.Event) -> dict[str, Any]:
        result: dict[str, Any] = {}
        if job["action"] in ("backfill", "migrate"):
            progress = await backfill(db=self.db, embedder=embedder, duty=float(job["duty"]),
                                      entity_ids=job["entity_ids"], should_stop=stop.is_set)
            result["backfill"] = progress.as_dict()
            if progress.stopped or job["action"] == "backfill":
                return result
        if job["action"] == "rollback" and await rollback_model(self.db, job["entity_ids"]) != job["model_id"]:
            raise Conflict("the serving model changed since the rollback was asked for", field="model")
        done = await cutover(self.db, embedder, rollback=job["action"] == "rollback", entity_ids=job["entity_ids"])
        result["cutover"] = done.as_dict()
        return result

    async def _renew(self, job_id: int, stop: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                row = await self.db.fetchone(SQL["renew_job"], {"id": job_id, "lease": self.lease})
            except Exception:
                log.warning("model job %d: renewing its lease failed", job_id, exc_info=True)
                continue
            if row is None or row["stop_requested"]:
                stop.set()
