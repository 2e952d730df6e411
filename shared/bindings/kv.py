"""KV binding: diskcache by default, behind an interface a Redis backend can fill.

Values are any picklable Python object (results are stored as dicts). ``transact``
makes a group of operations atomic across processes, which the cache uses to make
"check the invalidation sequence, then write" indivisible from invalidation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import diskcache


class KV(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...
    def put(self, key: str, value: Any, *, ttl: float | None = None) -> None: ...
    def delete(self, *keys: str) -> int: ...
    def list(self, prefix: str = "", *, limit: int | None = None) -> list[str]: ...
    def incr(self, key: str, delta: int = 1) -> int: ...
    def transact(self) -> contextlib.AbstractContextManager: ...


class DiskKV:
    """diskcache.Cache on a folder; safe to share between worker processes."""

    def __init__(self, path: str | Path, *, namespace: str, default_ttl: float | None = None) -> None:
        self.path = Path(path)
        self.namespace = namespace
        self.default_ttl = default_ttl
        # sqlite in WAL mode; a short timeout keeps concurrent writers from erroring.
        # Evict the least recently *stored*: with "least-recently-used" every get is a write
        # transaction (it updates the access time under BEGIN IMMEDIATE), so each search's
        # sequence and result reads queued behind every other process's writes. Stored order is
        # also the safe order: an entity's sequence key is rewritten at each change, after every
        # result computed at an older sequence, so eviction takes those stale results first and
        # never a sequence that still makes them stale.
        self._cache = diskcache.Cache(str(self.path), timeout=5, size_limit=2**32,
                                      eviction_policy="least-recently-stored")

    def _k(self, key: str) -> str:
        return f"{self.namespace}:{key}"

    def get(self, key: str, default: Any = None) -> Any:
        return self._cache.get(self._k(key), default)

    def put(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        self._cache.set(self._k(key), value, expire=ttl if ttl is not None else self.default_ttl)

    def delete(self, *keys: str) -> int:
        return sum(1 for key in keys if self._cache.delete(self._k(key)))

    def list(self, prefix: str = "", *, limit: int | None = None) -> list[str]:
        full = self._k(prefix)
        start = len(self.namespace) + 1
        found: list[str] = []
        for key in self._cache.iterkeys():
            if isinstance(key, str) and key.startswith(full):
                found.append(key[start:])
                if limit is not None and len(found) >= limit:
                    break
        return found

    def incr(self, key: str, delta: int = 1) -> int:
        return self._cache.incr(self._k(key), delta, default=0)

    @contextlib.contextmanager
    def transact(self) -> Iterator[None]:
        with self._cache.transact():
            yield

    def close(self) -> None:
        self._cache.close()

    def describe(self) -> dict:
        return {"type": "kv_namespace", "id": self.namespace, "backend": "diskcache", "path": str(self.path)}
