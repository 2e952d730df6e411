"""scripts/wrk_search.py: wrk sends the bodies in order, one per request, and counts each answer's outcome.

A stand-in HTTP server (stdlib, in a thread) records every body it receives and answers with the
outcome the body asks for; a ``"cache"`` key in a result's metadata must not be what is counted.
"""

from __future__ import annotations

import http.server
import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import wrk_search  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[dict] = []
        self.lock = threading.Lock()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as wrk expects
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK wait between

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.received.append(body)
        # a result's own metadata may hold a "cache" key, before the answer's: only the answer's counts
        answer = json.dumps({"results": [{"metadata": {"cache": "exact"}}], "cache": body["outcome"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_each_request_sends_the_next_body_and_each_answer_outcome_is_counted(server):
    bodies = [{"query": f"q{i}", "outcome": "semantic" if i % 3 == 0 else "none"} for i in range(40)]
    url = f"http://127.0.0.1:{server.server_address[1]}"
    result = wrk_search.run(url, "key", bodies, agents=1, seconds=1, limit=25)

    counts = result["counts"]
    assert counts["answered"] == 25 == result["requests"]  # stopped by the limit
    assert counts["sent"] >= 25
    received = server.received[:25]
    assert [b["query"] for b in received] == [f"q{i}" for i in range(25)]  # in order, none twice
    expected_semantic = sum(1 for b in received if b["outcome"] == "semantic")
    assert counts["semantic"] == expected_semantic == 9
    assert counts["none"] == 25 - expected_semantic
    assert counts["exact"] == 0 and counts["failed"] == 0


def test_bodies_repeat_only_past_the_end_of_the_file(server):
    bodies = [{"query": f"q{i}", "outcome": "none"} for i in range(3)]
    url = f"http://127.0.0.1:{server.server_address[1]}"
    result = wrk_search.run(url, "key", bodies, agents=1, seconds=1, limit=7)

    assert result["counts"]["answered"] == 7
    assert [b["query"] for b in server.received[:7]] == ["q0", "q1", "q2", "q0", "q1", "q2", "q0"]


def test_wrk_latencies_read_in_milliseconds_whatever_unit_wrk_printed():
    # load_search's exact-hit line reads wrk's percentiles through this too
    assert [wrk_search.wrk_ms(t) for t in ("812.00us", "1.52ms", "2.01s", "1.00m")] == \
        pytest.approx([0.812, 1.52, 2010.0, 60_000.0])
    assert wrk_search.wrk_ms(None) is None and wrk_search.wrk_ms("n/a") is None
