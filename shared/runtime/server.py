"""Run one worker: its HTTP ``fetch`` on its port and its queue consumers.

``edgeindex worker search`` runs this in its own process, which is how
production deploys each worker; ``edgeindex dev`` starts one per worker.

A worker's entry module provides ``async startup(env) -> services`` (builds its
typed services once from the bindings), ``async fetch(request, services, ctx)``
and, when it consumes a queue, ``async queue(batch, services, ctx)``.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from aiohttp import web

from .. import startup_progress
from ..bindings.queue import Consumer, SQSQueue
from ..config import Config
from ..env import Env, ExecutionContext, open_env, sqs_client
from ..errors import ConfigError
from . import openapi, serving_model, stopping
from .http import JSONErrorServer, error_middleware, json_response

log = logging.getLogger(__name__)
ENV_KEY = web.AppKey("env", Env)
# One header line's limit: above a key's own limit (tenancy.MAX_KEY_CHARS) with room to spare, so an
# over-long key is refused by the key check as unauthorized, not by the parser as a bad request.
MAX_HEADER_BYTES = 32 * 1024
SECRETS = {"ADMIN_KEY": "EDGEINDEX_ADMIN_KEY", "UPLOAD_SIGNING_KEY": "EDGEINDEX_UPLOAD_SIGNING_KEY"}  # env.secrets name → the environment variable holding it


def load_module(config: Config, name: str) -> ModuleType:
    """The worker's entry module named by ``main`` (``workers/x.py`` is ``edgeindex.workers.x``)."""
    main = Path(config.worker(name).main)
    if main.parts[0] == "workers" and len(main.parts) == 2:
        return importlib.import_module(f"edgeindex.workers.{main.stem}")
    path = main if main.is_absolute() else config.root / main
    spec = importlib.util.spec_from_file_location(f"edgeindex_worker_{name}", path)
    if spec is None or not path.exists():
        raise ConfigError(f"entry module {main} not found", file=str(config.path), key=f"workers.{name}.main")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _check_handlers(config: Config, name: str, module: ModuleType) -> None:
    worker = config.worker(name)
    if not callable(getattr(module, "startup", None)):
        raise ConfigError("entry module has no startup(env) that builds its services", file=str(config.path),
                          key=f"workers.{name}.main")
    if not callable(getattr(module, "fetch", None)):
        raise ConfigError("entry module has no fetch(request, services, ctx)", file=str(config.path),
                          key=f"workers.{name}.main")
    if worker.queues.consumers and not callable(getattr(module, "queue", None)):
        raise ConfigError("worker consumes a queue but its entry module has no queue(batch, services, ctx)",
                          file=str(config.path), key=f"workers.{name}.queues.consumers")


def _entity_models(services) -> dict[str, str]:
    """The entities this worker searches with another model than the deployment's (search/entity_models.py)."""
    serving = getattr(getattr(services, "search", None), "entity_models", None)
    if serving is None:
        return {}
    return {entity: model for entity, model in serving.models.items() if model in serving.services}


def build_app(module: ModuleType, env: Env, services: serving_model.Services, ctx: ExecutionContext, *,
              consumers: list[Consumer]) -> web.Application:
    # a worker that takes uploads reads bodies up to its MAX_UPLOAD_BYTES (and a request's envelope)
    checked = env.config.checked_vars.get(env.worker_name)
    uploads = getattr(checked, "MAX_UPLOAD_BYTES", None) or int(env.worker.vars.get("MAX_UPLOAD_BYTES", 1_048_576))
    max_body = uploads + 65_536
    app = web.Application(client_max_size=max_body, middlewares=[error_middleware])
    app[ENV_KEY] = env
    started = time.time()

    async def health(request: web.Request) -> web.Response:
        routes = getattr(module, "routes", None)
        return json_response({
            "worker": env.worker_name,
            "status": "ok",
            "pid": os.getpid(),  # which of the worker's processes answered (several share a port)
            "uptime_seconds": round(time.time() - started, 1),
            "gc_frozen_objects": gc.get_freeze_count(),  # start-up's objects, kept out of collections
            "bindings": env.describe(),
            "vars": sorted(env.worker.vars),
            "consumers": [{"queue": c.queue.name, "batches": c.batches} for c in consumers],
            "routes": routes.paths() if routes else [],
            "entity_models": _entity_models(services.current),
        })

    async def dispatch(request: web.Request) -> web.StreamResponse:
        return await module.fetch(request, services.current, ctx)

    app.router.add_get("/health", health)
    if routes := getattr(module, "routes", None):
        openapi.attach(app, lambda: openapi.build_spec(
            routes, title=f"edgeindex {env.worker_name} worker", description=(module.__doc__ or "").strip()))
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app


async def serve(config: Config, name: str, *, stop: asyncio.Event | None = None,
                host: str | None = None, hard_exit: bool | None = None) -> None:
    """Serve until ``stop`` is set (or SIGINT/SIGTERM when none is given). The stop has one deadline,
    ``EDGEINDEX_STOP_SECONDS``; ``hard_exit`` (default: when no ``stop`` is given, i.e. the process is the
    worker's own) ends the process if it is still not stopped soon after (stopping.py)."""
    module = load_module(config, name)
    _check_handlers(config, name, module)
    stop_seconds = stopping.stop_seconds()  # a bad value fails at start-up, not at the stop
    poll_every = serving_model.poll_seconds()
    hard_exit = stop is None if hard_exit is None else hard_exit
    worker = config.worker(name)
    host = host or os.environ.get("EDGEINDEX_HOST", "127.0.0.1")
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

    secrets = {name_: os.environ.get(variable, "") for name_, variable in SECRETS.items()}
    async with open_env(config, name, secrets=secrets) as env:
        ctx = ExecutionContext()
        startup_progress.report("building the worker's services")
        services = serving_model.Services(await module.startup(env))
        # What start-up built (modules, the model, tokenizers: ~500k objects in a search worker) lives
        # as long as the process. Left to the collector, each full collection walks all of it: 0.2-1 s
        # with the loop stopped, every request waiting, at a rate set by the request traffic. Frozen,
        # it is never walked again; later garbage is collected as usual.
        gc.collect()
        gc.freeze()
        consumers: list[Consumer] = []
        if worker.queues.consumers:
            sqs = sqs_client(config)
            for settings in worker.queues.consumers:
                dlq = SQSQueue(sqs, settings.dead_letter_queue) if settings.dead_letter_queue else None
                consumers.append(Consumer(SQSQueue(sqs, settings.queue), settings, dead_letter=dlq,
                                          poll_wait_seconds=config.services.sqs.poll_wait_seconds))
        app = build_app(module, env, services, ctx, consumers=consumers)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, max_field_size=MAX_HEADER_BYTES)
        await runner.setup()
        # Requests aiohttp cannot parse get our JSON error shape too (see http.JSONErrorRequestHandler).
        runner.server.__class__ = JSONErrorServer
        # several processes of one worker share its port: the kernel spreads connections among them
        site = web.TCPSite(runner, host, worker.port, reuse_address=True, reuse_port=worker.processes > 1)
        await site.start()
        startup_progress.report("ready")
        log.info("worker %s listening on http://%s:%d", name, host, worker.port)
        print(f"edgeindex: worker {name} ready on http://{host}:{worker.port}", flush=True)

        async def handle(batch):
            await module.queue(batch, services.current, ctx)

        # max_concurrency loops per consumer: the next batch starts while another one is still running
        tasks = [asyncio.create_task(c.run(handle, stop), name=f"consumer:{c.queue.name}:{i}")
                 for c in consumers for i in range(c.settings.max_concurrency)]
        if worker.ai and worker.hyperdrive:  # a cutover changes the model; the worker follows it
            db = env.bindings[worker.hyperdrive[0].binding]
            follower = serving_model.ServingModelFollower(env, module, services, db, every=poll_every)
            tasks.append(asyncio.create_task(follower.run(stop), name="serving-model"))
        try:
            await stop.wait()
        finally:
            # One deadline for the whole stop (stopping.py): the batches in hand and the wait_until work
            # are awaited together; what outlives it is cancelled and named (a message left unsettled is
            # redelivered anyway), and past it the watchdog ends the process whatever still holds it.
            deadline = stopping.Deadline(stop_seconds)
            if hard_exit:
                stopping.start_watchdog(deadline, name)
            left = await stopping.wait_all(tasks, deadline)
            left += await stopping.wait_all(ctx.pending(), deadline)
            abandoned = [stopping.describe(t) for t in left]
            await stopping.abandon(left)
            await stopping.bounded(runner.cleanup(), deadline, "the HTTP server's cleanup", abandoned)
            if abandoned:
                log.warning("worker %s: stop deadline of %.0f s (%s) passed; abandoned: %s", name,
                            deadline.seconds, stopping.VARIABLE, ", ".join(abandoned))


PROCESS_VARIABLE = "EDGEINDEX_WORKER_PROCESS"  # set in the copies a worker's first process starts


def run(config: Config, name: str, *, host: str | None = None) -> None:
    """``edgeindex worker NAME``: the worker's ``processes`` copies on its one port.

    The first process starts the others (``processes - 1`` copies of the same command, which die
    with it) and serves beside them; each copy has its own bindings, model and event loop, and
    the kernel (SO_REUSEPORT) hands each new connection to one of them. Production runs the same
    command, or one process per container with ``processes = 1`` behind a load balancer.
    """
    from .dev import _die_with_parent  # the dev stack's workers die with it the same way

    worker = config.worker(name)
    copies: list[subprocess.Popen] = []
    if worker.processes > 1 and not os.environ.get(PROCESS_VARIABLE):
        command = [sys.executable, *sys.orig_argv[1:]]  # this process's own command line, launcher included
        for index in range(1, worker.processes):
            copies.append(subprocess.Popen(command, env={**os.environ, PROCESS_VARIABLE: str(index)},
                                           preexec_fn=_die_with_parent))
    try:
        asyncio.run(serve(config, name, host=host))
    finally:
        for copy in copies:
            copy.terminate()
        for copy in copies:
            try:
                copy.wait(timeout=40)
            except subprocess.TimeoutExpired:
                copy.kill()
                copy.wait()

