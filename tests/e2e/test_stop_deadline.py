"""A worker stops within its one stop deadline (``EDGEINDEX_STOP_SECONDS``, runtime/stopping.py) when a
dependency hangs: its queue endpoint accepts connections and never answers, so every consumer loop is
inside a call that would block for its read timeout and retries (minutes), and the threads of those calls
would hold the interpreter's exit. The worker is a real ``edgeindex worker`` process with a small entry
module of its own; no stack is needed."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

from edgeindex.runtime import stopping
from edgeindex.runtime.dev import free_port

DEADLINE = 3.0

WORKER = '''
from aiohttp import web


async def startup(env):
    return None


async def fetch(request, services, ctx):
    return web.json_response({})


async def queue(batch, services, ctx):
    pass
'''


class HungEndpoint:
    """Accepts connections, reads what comes, never answers."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.requests = 0
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self._open.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            if conn.recv(65536):
                self.requests += 1
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()
        for conn in self._open:
            conn.close()


def test_a_worker_whose_queue_hangs_stops_within_its_deadline(tmp_path):
    hung = HungEndpoint()
    (tmp_path / "hung_worker.py").write_text(WORKER)
    (tmp_path / "wrangler.toml").write_text(textwrap.dedent(f'''
        name = "stop-test"
        compatibility_date = "2026-11-01"
        state_dir = "state"

        [services.sqs]
        endpoint = "{hung.url}"
        region = "us-east-1"

        [services.s3]
        endpoint = "{hung.url}"
        region = "us-east-1"

        [workers.hung]
        main = "{tmp_path / 'hung_worker.py'}"
        port = {free_port()}

        [[workers.hung.queues.consumers]]
        queue = "hung-queue"
        max_batch_size = 1
        max_concurrency = 4
        '''))
    environ = {"PATH": "/usr/bin:/bin", "EDGEINDEX_STOP_SECONDS": str(DEADLINE), "AWS_ACCESS_KEY_ID": "x",
               "AWS_SECRET_ACCESS_KEY": "x", "HOME": str(tmp_path)}
    log_path = tmp_path / "worker.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "edgeindex.cli", "--config", str(tmp_path / "wrangler.toml"),
                                    "worker", "hung"], stdout=log, stderr=subprocess.STDOUT, env=environ,
                                   cwd=str(tmp_path))
    try:
        bound = time.monotonic() + 60
        while not hung.requests:  # a consumer's first call is in flight, and will not come back
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < bound, log_path.read_text()
            time.sleep(0.1)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=DEADLINE + stopping.WATCHDOG_GRACE + 10)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker ignored SIGTERM for {DEADLINE + stopping.WATCHDOG_GRACE + 10:.0f} s:\n"
                                 + log_path.read_text()[-3000:]) from None
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        hung.close()
    output = log_path.read_text()
    assert took < DEADLINE + stopping.WATCHDOG_GRACE + 2, (took, output[-3000:])
    # the consumer loops were cancelled at the deadline and named...
    assert "stop deadline of 3 s (EDGEINDEX_STOP_SECONDS) passed; abandoned: consumer:hung-queue:0" in output, output[-3000:]
    # ...and the threads of their hung calls, which would have held the exit, by the watchdog that ended it
    assert "after its stop deadline" in output and "abandoning aws" in output, output[-3000:]
    assert code == stopping.EXIT_CODE, (code, output[-3000:])
