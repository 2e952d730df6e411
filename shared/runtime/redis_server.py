"""A local ``redis-server`` (or ``valkey-server``) process for the dev stack and the tests.

Nothing is persisted: the KV holds caches, sequences and counters, all of which a restart may
lose (sequences restart from 0 together with the results stored under them, and the KV's epoch,
``cache.read_epoch``, is drawn anew, so no copy made before the restart matches after it).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

from ..errors import ConfigError


def server_binary() -> str:
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return found
    raise ConfigError("services.kv.backend = \"redis\" needs redis-server or valkey-server on PATH "
                      "(Debian: apt-get install redis-server)", key="services.kv.backend")


class RedisServer:
    """``with RedisServer(folder, port) as server: server.url``; stopped (and waited for) on exit."""

    def __init__(self, folder: str | Path, port: int, *, host: str = "127.0.0.1", start_timeout: float = 30) -> None:
        self.folder, self.host, self.port = Path(folder), host, port
        self.start_timeout = start_timeout
        self.url = f"redis://{host}:{port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "redis.log", "ab")  # noqa: SIM115 - the server writes to it until stop
        self.process = subprocess.Popen(
            [server_binary(), "--bind", self.host, "--port", str(self.port), "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + self.start_timeout
        try:
            while True:
                if self.process.poll() is not None:
                    raise ConfigError(f"redis-server exited with {self.process.returncode}; see "
                                      f"{self.folder / 'redis.log'}", key="services.kv.url")
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)  # polling the port: the server gives no other sign of readiness
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
