"""Several search processes serve one port (the worker's ``processes`` setting, SO_REUSEPORT):
each answers, searches succeed whichever one a connection reaches, and stopping the first process
stops the others."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest
from edgeindex.runtime.dev import free_port

from ..helpers import Client, new_tenant


def _health(url: str) -> dict:
    # a new connection every time: the kernel picks the process per connection
    with urllib.request.urlopen(f"{url}/health", timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
def test_two_search_processes_serve_one_port(stack, upload_admin):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**stack.worker_environ(), "EDGEINDEX_SEARCH_PORT": str(port), "EDGEINDEX_SEARCH_PROCESSES": "2"}
    first = subprocess.Popen([sys.executable, "-m", "edgeindex.cli", "--config", str(stack.config.path.resolve()),
                              "worker", "search"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + 180  # each process loads the model and its query encoder
        while len(pids) < 2 and time.monotonic() < deadline:
            assert first.poll() is None, f"the search worker exited with {first.returncode}"
            try:
                pids.add(_health(url)["pid"])
            except OSError:
                time.sleep(0.2)  # not listening yet
        copies = {p.pid for p in psutil.Process(first.pid).children()}
        assert len(copies) == 1
        assert pids == {first.pid, *copies}

        tenant = new_tenant(stack, upload_admin)
        for _ in range(10):  # a client (so a connection) each: the kernel spreads them over both processes
            status, body = Client(url, tenant.key).post("/search", {"query": "rotate the oncall schedule",
                                                                     "cache": False})
            assert status == 200, body
            assert body["results"] == []  # a new tenant holds nothing
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    deadline = time.monotonic() + 30
    while any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in copies) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in copies if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
