"""Waiting for a worker's start-up by its progress: a slow start that keeps naming new stages is
waited for however long it takes; one that stays in a stage past the stall bound fails, saying which."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from edgeindex import startup_progress
from edgeindex.errors import BindingError
from edgeindex.runtime.dev import DevStack

from ..helpers import make_config

# a stand-in worker: names `stages` stages `pause` seconds apart, then answers /health (or never does)
WORKER = textwrap.dedent("""
    import http.server, json, sys, time
    from edgeindex import startup_progress
    port, stages, pause, serve = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "serve"
    for n in range(stages):
        startup_progress.report(f"stage {n}")
        time.sleep(pause)
    if not serve:
        time.sleep(3600)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
""")


def start(tmp_path, stages: int, pause: float, serve: bool) -> DevStack:
    stack = DevStack(make_config(tmp_path), verbose=False)
    progress = stack.startup_file("search")
    progress.parent.mkdir(parents=True, exist_ok=True)
    stack.processes["search"] = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(stack.config.worker("search").port), str(stages), str(pause),
         "serve" if serve else "hang"], env={startup_progress.FILE_VARIABLE: str(progress), "PATH": ""})
    return stack


def test_a_start_slower_than_the_stall_bound_is_waited_for_while_it_makes_progress(tmp_path):
    stack = start(tmp_path, stages=6, pause=0.5, serve=True)   # 3 s in all, no stage longer than 0.5 s
    try:
        assert stack.wait_healthy("search", stall=1.5) == {"status": "ok"}
    finally:
        stack.stop_worker("search", kill=True)


def test_a_start_stuck_in_one_stage_fails_naming_the_stage(tmp_path):
    stack = start(tmp_path, stages=1, pause=0, serve=False)
    try:
        with pytest.raises(BindingError, match=r"no start-up progress for 1s \(still stage 0\)"):
            stack.wait_healthy("search", stall=1.0)
    finally:
        stack.stop_worker("search", kill=True)
