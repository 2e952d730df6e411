"""`edgeindex dev` as a user runs it: comes up, answers /health, keeps data across a
restart, and Ctrl-C leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from edgeindex.bindings import aws
from edgeindex.runtime.dev import free_port

from ..helpers import ROOT, Client


def start_dev(state, ports: dict[str, int], admin_key: str | None = "dev-test-admin") -> subprocess.Popen:
    """``edgeindex dev`` on ``state``; with ``admin_key=None`` it makes its own, in ``state/admin_key``."""
    env = {**os.environ, "EDGEINDEX_STATE_DIR": str(state)}
    env.pop("EDGEINDEX_ADMIN_KEY", None)
    if admin_key is not None:
        env["EDGEINDEX_ADMIN_KEY"] = admin_key
    env.pop("EDGEINDEX_CONFIG", None)
    for name, port in ports.items():
        env[f"EDGEINDEX_{name.upper()}_PORT"] = str(port)
    return subprocess.Popen([sys.executable, "-m", "edgeindex.cli", "dev"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_up(process: subprocess.Popen, timeout: float = 180) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError("edgeindex dev exited early:\n" + "".join(lines[-40:]))
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            return lines
    raise AssertionError("edgeindex dev did not come up:\n" + "".join(lines[-40:]))


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=120)
    return out


def leftovers(state) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if str(state) in cmd:
            found.append(f"{proc.info['pid']}: {cmd}")
    return found


@pytest.mark.slow
def test_dev_up_health_restart_and_clean_shutdown(tmp_path):
    state = tmp_path / "state"
    ports = {name: free_port() for name in ("upload", "ingest", "search", "mcp")}
    first = start_dev(state, ports)
    try:
        lines = wait_up(first)
        printed = "".join(lines)
        for name, port in ports.items():
            assert f"http://127.0.0.1:{port}" in printed
            status, body = Client(f"http://127.0.0.1:{port}").get("/health")
            assert status == 200 and body["worker"] == name and body["bindings"]
        # where things are: the state folder, the MCP endpoint, the database to point other commands at
        assert f"state folder: {state}" in printed and f"mcp url: http://127.0.0.1:{ports['mcp']}/mcp" in printed
        assert "  postgres: postgresql://" in printed and "(from $EDGEINDEX_ADMIN_KEY)" in printed
        s3_endpoint = next(l for l in lines if "s3+sqs" in l).split("s3+sqs ")[1].split()[0]
        admin = Client(f"http://127.0.0.1:{ports['upload']}", "dev-test-admin")
        # data in Postgres, and an acknowledged object in the embedded bucket
        status, _ = admin.post("/admin/entities", {"id": "keepme", "kind": "user"})
        assert status == 201
        s3 = aws.client("s3", endpoint=s3_endpoint, region="us-east-1", access_key_id="x", secret_access_key="y")
        s3.put_object(Bucket="edgeindex-documents", Key="kept/object.txt", Body=b"survives restarts")
    finally:
        out = stop(first)
    assert first.returncode == 0, out
    assert "stopped" in out
    _no_leftovers(state)

    second = start_dev(state, ports)
    try:
        lines = wait_up(second)
        assert any("restored 1 object" in l for l in lines), "".join(lines)
        s3_endpoint = next(l for l in lines if "s3+sqs" in l).split("s3+sqs ")[1].split()[0]
        s3 = aws.client("s3", endpoint=s3_endpoint, region="us-east-1", access_key_id="x", secret_access_key="y")
        body = s3.get_object(Bucket="edgeindex-documents", Key="kept/object.txt")["Body"].read()
        assert body == b"survives restarts"
        admin = Client(f"http://127.0.0.1:{ports['upload']}", "dev-test-admin")
        status, body = admin.get("/admin/entities")
        assert status == 200 and "keepme" in {e["id"] for e in body["entities"]}
    finally:
        stop(second)
    _no_leftovers(state)


def _no_leftovers(state) -> None:
    """Every process of the stack gone (bounded poll: the last ones exit just after dev does)."""
    deadline = time.monotonic() + 15
    while (found := leftovers(state)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found == []
