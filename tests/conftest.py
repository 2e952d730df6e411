"""Shared fixtures: one real stack per test session (embedded Postgres, moto server
over HTTP, diskcache, the real embedding model, three worker processes)."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from pathlib import Path

import pytest

from edgeindex import config as config_module
from edgeindex.bindings.database import Database
from edgeindex.runtime.dev import DevStack, free_port

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def make_config(state_dir: Path, **extra_env: str) -> config_module.Config:
    environ = {"EDGEINDEX_STATE_DIR": str(state_dir), **extra_env}
    for name in ("upload", "ingest", "search"):
        environ.setdefault(f"EDGEINDEX_{name.upper()}_PORT", str(free_port()))
    return config_module.load(ROOT / "wrangler.toml", environ=environ)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    cfg = make_config(state)
    log_path = state / "workers.log"
    with open(log_path, "w") as log:
        stack = DevStack(cfg, worker_output=log, environ={**os.environ, "EDGEINDEX_ADMIN_KEY": "test-admin-key"})
        try:
            stack.start()
        except Exception:
            log.flush()
            print(log_path.read_text()[-5000:])
            raise
        stack.log_path = log_path
        yield stack
        stack.stop()


@pytest.fixture(scope="session")
async def db(stack):
    database = Database(stack.dsn, max_size=4)
    await database.open()
    yield database
    await database.close()


class Client:
    """Minimal JSON-over-HTTP client for the workers (stdlib, so tests see raw HTTP)."""

    def __init__(self, base: str, key: str | None = None) -> None:
        self.base = base
        self.key = key

    def request(self, method: str, path: str, body=None, *, headers: dict | None = None, raw: bytes | None = None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if body is not None and raw is None:
            req.add_header("Content-Type", "application/json")
        if self.key:
            req.add_header("Authorization", f"Bearer {self.key}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                payload = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            payload = err.read()
            status = err.code
        try:
            return status, json.loads(payload) if payload else None
        except json.JSONDecodeError:
            return status, payload

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture(scope="session")
def upload_admin(stack) -> Client:
    return Client(stack.url("upload"), stack.admin_key)


@pytest.fixture(scope="session")
def search_url(stack) -> str:
    return stack.url("search")


async def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Poll an async or sync predicate until it returns a truthy value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)
