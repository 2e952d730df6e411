"""Ingest worker: consumes object-created events and runs the ingestion workflow per document version."""

from __future__ import annotations

import asyncio
import logging

from edgeindex import api_models, sqlfiles, tenancy
from edgeindex.errors import NotFound, ValidationError
from edgeindex.ingest import consumer
from edgeindex.ingest.workflow import EXECUTED
from edgeindex.runtime.router import Router

log = logging.getLogger(__name__)
router = Router()
SQL = sqlfiles.load("ingest.sql")
_background: set[asyncio.Task] = set()


async def startup(env) -> None:
    task = asyncio.create_task(consumer.resume_unfinished(env))
    _background.add(task)
    task.add_done_callback(_background.discard)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)


async def queue(batch, env, ctx):
    await consumer.handle_batch(batch, env)


@router.get("/runs", query=api_models.RunQuery, response=api_models.RunStatus, auth="admin")
async def run_status(request, env, ctx):
    """A run's checkpoints, and which steps this process executed for it (admin; diagnostics)."""
    await tenancy.require_admin(env.DB, request.headers)
    run_id = request.query.get("id")
    if not run_id:
        raise ValidationError("query parameter id (the run id) is required", field="id")
    status = await env.INGEST_WORKFLOW.get(run_id)
    if status is None:
        raise NotFound(f"no workflow run {run_id!r}", field="id")
    steps = await env.DB.fetch(SQL["run_steps"], {"run_id": run_id})
    invocations = await env.DB.fetchone(SQL["run_invocations"], {"run_id": run_id})
    return {"id": run_id, "status": status.status, "invocations": invocations["attempts"],
            "current_step": status.current_step, "error": status.error,
            "steps": [{**s, "completed_at": s["completed_at"].isoformat()} for s in steps],
            "executed_here": EXECUTED.get(run_id, [])}
