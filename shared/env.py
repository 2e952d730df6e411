"""Build a worker's ``env`` from wrangler.toml: every declared binding, built once.

Handlers only read ``env.NAME``; nothing else constructs clients. Vars are
attributes too (``env.MAX_K``), as in Cloudflare Workers.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from . import startup_progress
from .bindings import aws
from .bindings.ai import AI, model_identity, serving_settings
from .bindings.bucket import S3Bucket
from .bindings.database import Database
from .bindings.kv import KV, DiskKV
from .bindings.queue import SQSQueue
from .bindings.rerank import HTTPReranker
from .bindings.vectorize import PgVectorIndex
from .config import Config, Worker
from .errors import ConfigError
from .workflow import Workflow, WorkflowBinding

log = logging.getLogger(__name__)


class Env:
    """Attribute bag of bindings and vars, plus what the runtime needs to know."""

    def __init__(self, name: str, config: Config, worker: Worker, secrets: dict[str, str] | None = None) -> None:
        self.worker_name = name
        self.config = config
        self.worker = worker
        self.secrets = dict(secrets or {})  # as `wrangler secret put`: never in wrangler.toml, never logged
        self.bindings: dict[str, Any] = {}
        for key, value in worker.vars.items():
            setattr(self, key, value)

    def bind(self, name: str, value: Any) -> None:
        self.bindings[name] = value
        setattr(self, name, value)

    def rebound(self, changes: dict[str, Any]) -> Env:
        """A copy of this env with ``changes``' bindings in place of its own; this env is unchanged."""
        clone = copy.copy(self)
        clone.bindings = dict(self.bindings)
        for name, value in changes.items():
            clone.bind(name, value)
        return clone

    def var(self, name: str, cast: type = str) -> Any:
        """A var: as its schema checked it (worker_vars.py), or, for a worker of the deployment's own,
        converted here (env overrides arrive as strings); a bad value names the key."""
        checked = self.config.checked_vars.get(self.worker_name)
        if checked is not None:
            if name not in type(checked).model_fields:
                raise ConfigError("no such var", file=str(self.config.path),
                                  key=f"workers.{self.worker_name}.vars.{name}")
            return getattr(checked, name)
        try:
            raw = self.worker.vars[name]
        except KeyError:
            raise ConfigError("missing var", file=str(self.config.path),
                              key=f"workers.{self.worker_name}.vars.{name}") from None
        try:
            if cast is bool and isinstance(raw, str):
                return raw.strip().lower() in ("1", "true", "yes", "on")
            return cast(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"expected {cast.__name__}, got {raw!r}", file=str(self.config.path),
                              key=f"workers.{self.worker_name}.vars.{name}") from None

    def describe(self) -> dict:
        described = {}
        for name, binding in self.bindings.items():
            describe = getattr(binding, "describe", None)
            described[name] = describe() if describe else {"type": type(binding).__name__}
        return described


class ExecutionContext:
    """``ctx``: ``wait_until`` keeps work alive after the response, as in Workers."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()

    def wait_until(self, coro: Coroutine) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception():
            log.error("wait_until task failed", exc_info=task.exception())

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def pending(self) -> list[asyncio.Task]:
        """The work still running (a worker's stop waits for it within its deadline: runtime/stopping.py)."""
        return [t for t in self._tasks if not t.done()]


def import_class(dotted: str, *, key: str, config: Config) -> type:
    module_name, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"cannot import class {dotted!r}: {exc}", file=str(config.path), key=key) from None


@asynccontextmanager
async def open_env(config: Config, worker_name: str, *, migrate: bool = True,
                   secrets: dict[str, str] | None = None) -> AsyncIterator[Env]:
    """Open every binding the worker declares; close them all on exit."""
    worker = config.worker(worker_name)
    env = Env(worker_name, config, worker, secrets)
    services = config.services
    async with AsyncExitStack() as stack:
        if worker.r2_buckets:
            s3 = s3_client(config)
            presigner = s3_client(config, public=True) if services.s3.public_endpoint else None
            for b in worker.r2_buckets:
                env.bind(b.binding, S3Bucket(s3, b.bucket_name, presign_expires=services.s3.presign_expires,
                                             presign_client=presigner))
        if worker.queues.producers:
            sqs = sqs_client(config)
            for p in worker.queues.producers:
                env.bind(p.binding, SQSQueue(sqs, p.queue))
        startup_progress.report("opening the object store, queue and KV bindings")
        for ns in worker.kv_namespaces:
            kv = kv_namespace(config, ns.id)
            stack.callback(kv.close)
            env.bind(ns.binding, kv)

        ai_settings = services.ai
        model_id, dimension = model_identity(ai_settings)
        db: Database | None = None
        for h in worker.hyperdrive:
            db = Database(services.database.dsn, min_size=services.database.pool_min,
                          max_size=max(h.pool_max or services.database.pool_max, services.database.pool_min),
                          name=h.binding)
            # the database's serving model, which a cutover may have changed from the configured one
            ai_settings = serving_settings(services.ai, await db.stored_model())
            model_id, dimension = model_identity(ai_settings)
            if migrate:
                startup_progress.report("migrating the database")
                await db.migrate(model_id=model_id, dimension=dimension)
            await db.open()
            stack.push_async_callback(db.close)
            env.bind(h.binding, db)

        if worker.ai:
            startup_progress.report("loading the embedding model")
            ai = await asyncio.to_thread(AI, ai_settings)
            stack.push_async_callback(ai.close)
            env.bind(worker.ai.binding, ai)

        if worker.rerank and worker.rerank.url:
            env.bind(worker.rerank.binding, HTTPReranker(worker.rerank.url, model=worker.rerank.model))

        for index in worker.vectorize:
            if db is None:
                raise ConfigError("a vectorize binding needs a hyperdrive (database) binding in the same worker",
                                  file=str(config.path), key=f"workers.{worker_name}.vectorize")
            env.bind(index.binding, PgVectorIndex(db, index.index_name, model_id=model_id, dimension=dimension))

        for i, wf in enumerate(worker.workflows):
            if db is None:
                raise ConfigError("a workflow binding needs a hyperdrive (database) binding in the same worker",
                                  file=str(config.path), key=f"workers.{worker_name}.workflows")
            cls = import_class(wf.class_name, key=f"workers.{worker_name}.workflows[{i}].class_name", config=config)
            if not (isinstance(cls, type) and issubclass(cls, Workflow)):
                raise ConfigError(f"{wf.class_name} is not a Workflow subclass", file=str(config.path),
                                  key=f"workers.{worker_name}.workflows[{i}].class_name")
            env.bind(wf.binding, WorkflowBinding(db, cls, name=wf.name))
        yield env


def s3_client(config: Config, *, public: bool = False):
    s = config.services.s3
    return aws.client("s3", endpoint=s.public_endpoint if public else s.endpoint, region=s.region,
                      access_key_id=s.access_key_id, secret_access_key=s.secret_access_key)


def sqs_client(config: Config):
    s = config.services.sqs
    return aws.client("sqs", endpoint=s.endpoint, region=s.region, access_key_id=s.access_key_id,
                      secret_access_key=s.secret_access_key)


def kv_namespace(config: Config, namespace: str) -> KV:
    """The configured KV engine's namespace: diskcache under the state folder, or a Redis server."""
    kv = config.services.kv
    if kv.backend == "redis":
        from .bindings.redis_kv import RedisKV  # the redis client is only loaded where it is used

        if not kv.url:
            raise ConfigError("backend = \"redis\" needs the server's url (only `edgeindex dev` starts one)",
                              file=str(config.path), key="services.kv.url")
        return RedisKV(kv.url, namespace=namespace, default_ttl=kv.default_ttl)
    return DiskKV(config.state_path / kv.path, namespace=namespace, default_ttl=kv.default_ttl)
