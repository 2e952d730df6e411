"""KV binding on Redis (or Valkey): one store shared by every process on every host.

The same ``KV`` protocol as ``DiskKV``. Values are pickled; a namespace is a key prefix.
A member set is a sorted set scored by each member's expiry, so members expire one by one
(expired ones are trimmed whenever the set is added to, and never returned).

``transact`` is optimistic (WATCH / MULTI / EXEC). Inside it, every ``get`` watches its key
and the writes that follow a read are queued and applied together at the end, only if no
watched key changed in between; if one did, nothing is written and ``KVConflict`` is raised.
That is the cache's "check the invalidation sequence, then write": an invalidation bumps the
sequence first, so a store that read the old sequence either commits before the bump (and the
invalidation then drops what it stored) or fails. A transaction that reads nothing applies each
operation at once and in order, each one atomic on the server, which is what an invalidation
needs (barrier, then sequence, then the drop of the entries that hold the chunks).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import pickle
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..errors import KVConflict, KVUnavailable

# A token bucket in one round trip, on the server's clock (every host agrees on it): refill by the
# time since the last take, take one token if there is one, else answer how long until there is.
_TAKE_TOKEN = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local state = redis.call('HMGET', KEYS[1], 'tokens', 'when')
local tokens = tonumber(state[1]) or burst
local when = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - when) * rate)
local wait = 0
if tokens < 1 then wait = (1 - tokens) / rate else tokens = tokens - 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'when', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


def _answered(method):
    """``method``, with the client's connection errors raised as ``KVUnavailable`` (the KV's server
    is down or restarting): callers that can go on without the KV catch that one error."""

    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as exc:
            raise KVUnavailable(f"the KV's Redis did not answer: {exc}") from exc

    return call


class RedisTokenBuckets:
    """Token buckets shared by every process and host on one Redis: ``take`` answers 0 when a token
    was taken, else the seconds until one is there."""

    def __init__(self, kv: RedisKV) -> None:
        self._kv = kv
        self._script = kv._redis.register_script(_TAKE_TOKEN)

    @_answered
    def take(self, bucket: str, rate: float, burst: float) -> float:
        return float(self._script(keys=[self._kv._k(f"bucket:{bucket}")], args=[rate, burst]))


class _Transaction:
    def __init__(self, pipe: redis.client.Pipeline) -> None:
        self.pipe = pipe
        self.read = False
        self.queued: builtins.list[tuple[str, tuple, dict]] = []


class RedisKV:
    """A namespace of a Redis database; thread-safe (a connection pool per instance)."""

    def __init__(self, url: str, *, namespace: str, default_ttl: float | None = None,
                 client: redis.Redis | None = None) -> None:
        self.url = url
        self.namespace = namespace
        self.default_ttl = default_ttl
        # one immediate retry (a pooled connection that a server restart closed), then KVUnavailable:
        # the caches go without the KV rather than hold a request through back-off
        self._redis = client or redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2,
                                                     health_check_interval=30, retry=Retry(NoBackoff(), 1))
        self._local = threading.local()

    def _k(self, key: str) -> str:
        return f"{self.namespace}:{key}"

    def _tx(self) -> _Transaction | None:
        return getattr(self._local, "tx", None)

    # values

    @_answered
    def get(self, key: str, default: Any = None) -> Any:
        tx = self._tx()
        if tx is not None:
            tx.read = True
            tx.pipe.watch(self._k(key))
            raw = tx.pipe.get(self._k(key))
        else:
            raw = self._redis.get(self._k(key))
        return default if raw is None else _decode(raw)

    @_answered
    def get_many(self, keys: builtins.list[str]) -> builtins.list[Any]:
        """The values of ``keys`` in order (None where absent), in one round trip (MGET): a search
        reads the epoch and each entity's sequence so."""
        if not keys:
            return []
        full = [self._k(key) for key in keys]
        tx = self._tx()
        if tx is not None:
            tx.read = True
            tx.pipe.watch(*full)
            raws = tx.pipe.mget(full)
        else:
            raws = self._redis.mget(full)
        return [None if raw is None else _decode(raw) for raw in raws]

    @_answered
    def put(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        if self._queue("put", key, value, ttl=ttl):
            return
        self._put(self._redis, key, value, ttl=ttl)

    def _put(self, target, key: str, value: Any, *, ttl: float | None) -> None:
        ttl = ttl if ttl is not None else self.default_ttl
        target.set(self._k(key), _encode(value),
                   px=max(1, int(ttl * 1000)) if ttl is not None else None)

    @_answered
    def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        if self._queue("delete", *keys):
            return 0  # counted at EXEC; the cache's transactions do not read this count
        return int(self._redis.delete(*(self._k(k) for k in keys)))

    @_answered
    def list(self, prefix: str = "", *, limit: int | None = None) -> list[str]:
        pattern = _glob_escape(self._k(prefix)) + "*"
        start = len(self.namespace) + 1
        found: builtins.list[str] = []
        for key in self._redis.scan_iter(match=pattern, count=1000):
            found.append(key.decode()[start:])
            if limit is not None and len(found) >= limit:
                break
        return found

    @_answered
    def incr(self, key: str, delta: int = 1) -> int:
        tx = self._tx()
        if tx is not None and tx.read:
            raise RuntimeError("RedisKV.transact: incr after a watched read is not supported")
        return int(self._redis.incrby(self._k(key), delta))

    # member sets

    @_answered
    def add_to_sets(self, names: Iterable[str], member: str, *, ttl: float) -> None:
        """Add ``member`` to each named set, for ``ttl`` seconds (or longer, if it was there longer)."""
        names = list(names)
        if self._queue("add_to_sets", names, member, ttl=ttl):
            return
        pipe = self._redis.pipeline(transaction=True)
        self._add_to_sets(pipe, names, member, ttl=ttl)
        pipe.execute()

    def _add_to_sets(self, target, names: builtins.list[str], member: str, *, ttl: float) -> None:
        now = time.time()
        expires = now + ttl
        seconds = max(1, int(ttl + 1))
        for name in names:
            key = self._k(name)
            target.zadd(key, {member: expires}, gt=True)  # GT adds a new member, or extends one
            target.zremrangebyscore(key, "-inf", now)
            target.expire(key, seconds, nx=True)
            target.expire(key, seconds, gt=True)

    @_answered
    def pop_sets(self, names: Iterable[str]) -> set[str]:
        """The live members of the named sets, taken out: the sets are deleted."""
        names = list(names)
        if not names:
            return set()
        now = time.time()
        pipe = self._redis.pipeline(transaction=True)
        for name in names:
            pipe.zrangebyscore(self._k(name), now, "+inf")
        pipe.delete(*(self._k(n) for n in names))
        replies: builtins.list[Any] = pipe.execute()
        return {m.decode() for reply in replies[:-1] for m in reply}

    @_answered
    def set_members(self, name: str) -> set[str]:
        members: Any = self._redis.zrangebyscore(self._k(name), time.time(), "+inf")
        return {m.decode() for m in members}

    # transactions

    def _queue(self, op: str, *args, **kwargs) -> bool:
        tx = self._tx()
        if tx is None or not tx.read:
            return False
        tx.queued.append((op, args, kwargs))
        return True

    @contextlib.contextmanager
    def transact(self) -> Iterator[None]:
        if self._tx() is not None:  # nested: part of the enclosing transaction
            yield
            return
        with self._redis.pipeline(transaction=True) as pipe:
            tx = _Transaction(pipe)
            self._local.tx = tx
            try:
                yield
            finally:
                self._local.tx = None
            if not tx.queued:
                return
            pipe.multi()
            for op, args, kwargs in tx.queued:
                if op == "put":
                    self._put(pipe, *args, **kwargs)
                elif op == "delete":
                    pipe.delete(*(self._k(k) for k in args))
                else:
                    self._add_to_sets(pipe, *args, **kwargs)
            try:
                pipe.execute()
            except redis.WatchError as exc:
                raise KVConflict("a key read in the transaction changed before it committed") from exc
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                raise KVUnavailable(f"the KV's Redis did not answer: {exc}") from exc

    def token_buckets(self) -> RedisTokenBuckets:
        return RedisTokenBuckets(self)

    def close(self) -> None:
        self._redis.close()

    def describe(self) -> dict:
        return {"type": "kv_namespace", "id": self.namespace, "backend": "redis", "url": _redacted(self.url)}


def _encode(value: Any) -> bytes:
    # integers as Redis's own decimal strings, so that ``incr`` and ``get``/``put`` agree on a counter
    if type(value) is int:
        return str(value).encode()
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _decode(raw: Any) -> Any:
    if raw[:1] == b"\x80":  # every pickle of protocol 2 or later starts with PROTO
        return pickle.loads(raw)  # noqa: S301 - values are written by this binding only
    return int(raw)


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _redacted(url: str) -> str:
    """The URL without its password (``describe`` is shown to operators and in logs)."""
    head, sep, tail = url.partition("@")
    if not sep or "://" not in head:
        return url
    scheme, _, _credentials = head.partition("://")
    return f"{scheme}://***@{tail}"
