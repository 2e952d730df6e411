"""KV binding: diskcache by default, behind an interface a Redis backend can fill.

Values are any picklable Python object (results are stored as dicts). ``transact``
makes a group of operations atomic across processes, which the cache uses to make
"check the invalidation sequence, then write" indivisible from invalidation.

Sets of strings (``add_to_sets``, ``pop_sets``) are kept apart from the values, one row per
member (Redis: SADD / SMEMBERS + DEL): adding a member never reads or rewrites the set, so a set
that many writers add to stays cheap to add to however large it grows. Each member expires on
its own; expired members are deleted now and then (``prune_sets``), so the sets are bounded by
what was added within the TTL.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import diskcache

from .. import sqlfiles

SQL = sqlfiles.load("kv_sets.sql")
PRUNE_EVERY = 500  # add_to_sets calls (per DiskKV) between two deletions of expired members


class KV(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...
    def get_many(self, keys: list[str]) -> list[Any]: ...
    def put(self, key: str, value: Any, *, ttl: float | None = None) -> None: ...
    def delete(self, *keys: str) -> int: ...
    def list(self, prefix: str = "", *, limit: int | None = None) -> list[str]: ...
    def incr(self, key: str, delta: int = 1) -> int: ...
    def transact(self) -> contextlib.AbstractContextManager: ...
    def close(self) -> None: ...
    def add_to_sets(self, names: Iterable[str], member: str, *, ttl: float) -> None: ...
    def pop_sets(self, names: Iterable[str]) -> set[str]: ...


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
        self._adds = 0
        self._sql(SQL["kv_sets_table"])
        self._sql(SQL["kv_sets_expiry_index"])

    def _sql(self, statement: str, params: dict | None = None):
        # diskcache's own connection (one per thread and process): inside ``transact`` the sets'
        # statements are in the same SQLite transaction as the values' (diskcache 5.6's ``_con``)
        return self._cache._con.execute(statement, params or {})

    def _k(self, key: str) -> str:
        return f"{self.namespace}:{key}"

    def get(self, key: str, default: Any = None) -> Any:
        return self._cache.get(self._k(key), default)

    def get_many(self, keys: list[str]) -> list[Any]:
        """The values of ``keys`` in order (None where absent)."""
        return [self._cache.get(self._k(key)) for key in keys]

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

    def add_to_sets(self, names: Iterable[str], member: str, *, ttl: float) -> None:
        """Add ``member`` to each named set, for ``ttl`` seconds (or longer, if it was there longer)."""
        expires = time.time() + ttl
        rows = [{"name": self._k(name), "member": member, "expires": expires} for name in names]
        self._cache._con.executemany(SQL["kv_sets_add"], rows)
        self._adds += 1
        if self._adds % PRUNE_EVERY == 0:
            self.prune_sets()

    def pop_sets(self, names: Iterable[str]) -> set[str]:
        """The live members of the named sets, taken out: the sets are deleted."""
        now, members = time.time(), set()
        for name in names:
            members.update(m for m, expires in self._sql(SQL["kv_sets_pop"], {"name": self._k(name)}).fetchall()
                           if expires > now)
        return members

    def set_members(self, name: str) -> set[str]:
        return {m for (m,) in self._sql(SQL["kv_sets_members"], {"name": self._k(name), "now": time.time()})}

    def prune_sets(self, *, now: float | None = None) -> int:
        """Delete the expired members of every set (of every namespace); how many were deleted."""
        return self._sql(SQL["kv_sets_prune"], {"now": time.time() if now is None else now}).rowcount

    def set_rows(self) -> int:
        """Rows this namespace's sets hold, expired members included (what ``prune_sets`` bounds)."""
        return self._sql(SQL["kv_sets_rows"], {"prefix": self._k("")}).fetchone()[0]

    def close(self) -> None:
        self._cache.close()

    def describe(self) -> dict:
        return {"type": "kv_namespace", "id": self.namespace, "backend": "diskcache", "path": str(self.path)}
