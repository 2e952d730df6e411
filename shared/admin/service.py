"""What the admin page needs that no other route gives: a per-tenant overview, the search worker
reached through this worker (same origin: the page needs no CORS), and the router's telemetry
when the deployment has it."""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
from datetime import datetime
from typing import Any

import aiohttp

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import BindingError, NotFound, ValidationError
from ..json_codec import encode_default
from ..models import backfill as model_backfills
from ..models import jobs as model_jobs
from ..models.cutover import history as cutover_history

log = logging.getLogger(__name__)
SQL = sqlfiles.load("admin.sql")
# The router's report (another package): ``summary(db)`` returns its figures as JSON-able data.
TELEMETRY_MODULE = "edgeindex.routing.report"
NO_TELEMETRY = ("no telemetry yet: this deployment records no routing telemetry "
                "(the router's report, edgeindex.routing.report.summary, is not installed or has no data)")
FORWARDED_HEADERS = ("Authorization", "X-API-Key", "Content-Type", "X-Request-Id")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class AdminService:
    """The admin page's own routes, given the upload worker's database and the search worker's URL."""

    def __init__(self, *, db: Database, search_url: str, timeout: float = 60.0) -> None:
        self.db = db
        self.search_url = search_url.rstrip("/")
        self.timeout = timeout

    async def overview(self) -> dict:
        rows = await self.db.fetch(SQL["overview"])
        return {"entities": [{
            "id": r["id"], "kind": r["kind"], "name": r["name"], "created_at": _plain(r["created_at"]),
            "keys": r["keys"],
            "documents": {s: r[s] for s in ("pending", "processing", "ready", "failed")},
        } for r in rows]}

    async def models(self) -> dict:
        return {**await model_backfills.status(self.db), "cutovers": await cutover_history(self.db),
                "jobs": await model_jobs.recent(self.db)}

    async def model_job(self, action: str, model: str | None, duty: float | None,
                        entity_ids: list[str] | None = None) -> dict:
        """Queued for an ingest worker (models/jobs.py), which loads the model and runs it."""
        return await model_jobs.submit(self.db, action, model, duty, entity_ids)

    async def stop_model_job(self, job_id: str) -> dict:
        if not job_id.isdigit() or len(job_id) > 18:
            raise ValidationError("id must be a model job's number", field="id")
        return await model_jobs.stop(self.db, int(job_id))

    async def drop_model(self, model: str) -> dict:
        model_id = model_backfills.stored_model_id(model)
        return {"model_id": model_id, "deleted": await model_backfills.drop(self.db, model_id)}

    async def search(self, body: bytes, headers) -> tuple[int, bytes, str]:
        """POST the body to the search worker's /search with the caller's own key: the search worker
        authorises it exactly as it would a direct call. (status, body, request id)."""
        forward = {name: headers[name] for name in FORWARDED_HEADERS if name in headers}
        forward.setdefault("Content-Type", "application/json")
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
                async with session.post(f"{self.search_url}/search", data=body, headers=forward) as resp:
                    return resp.status, await resp.read(), resp.headers.get("X-Request-Id", "")
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The URL is the deployment's own (SEARCH_URL), never a secret; the key is not in it.
            raise BindingError(f"the search worker at {self.search_url} did not answer: {exc.__class__.__name__}") \
                from None

    async def telemetry(self) -> Any:
        """The router's report as JSON, or a 404 the page shows as "no telemetry yet"."""
        try:
            report = importlib.import_module(TELEMETRY_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name not in (TELEMETRY_MODULE, TELEMETRY_MODULE.rpartition(".")[0]):
                raise  # the report is there but broken: a 500 with its traceback in the log
            raise NotFound(NO_TELEMETRY) from None
        summary = getattr(report, "summary", None)
        if summary is None:
            raise NotFound(NO_TELEMETRY)
        data = summary(self.db)
        if inspect.isawaitable(data):
            data = await data
        if not data:
            raise NotFound(NO_TELEMETRY)
        return json.loads(json.dumps(data, default=encode_default))


def search_url(env) -> str:
    """The search worker the playground goes through: the upload worker's SEARCH_URL var, or else the
    search worker the same wrangler.toml declares, on this host (how `edgeindex dev` runs them)."""
    if url := env.var("SEARCH_URL").strip():
        return url
    host = os.environ.get("EDGEINDEX_HOST", "127.0.0.1")  # where runtime/server.py binds the workers
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{host}:{env.config.worker('search').port}"
