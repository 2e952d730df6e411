"""Result cache storage in KV, with a reverse map chunk → cache entries.

Both caches (exact and semantic) store their results here under ``result:<key>``;
the semantic index only maps query embeddings to such keys, so deleting a KV
entry invalidates it for both.

Correctness when chunks change (no request may ever see a deleted chunk):
- every entry records the chunk ids it holds in ``ref:<chunk id>`` sets (the KV's sets: one row per
  member, so a store adds its key to each chunk's set without reading or rewriting the set, and a
  member expires with the entry it names);
- each entity has a sequence number ``seq:<entity>`` and a write barrier
  ``barrier:<entity>`` (a deadline, so a crashed ingest cannot block caching
  forever);
- a search reads the sequences of its entities *before* querying the database
  and stores its result only if, atomically, no barrier is up and no sequence
  moved; otherwise it just returns the result uncached;
- an entry keeps the sequences it was computed at and is served only while they
  are still current: any change in an entity (a new document ready, a version
  replaced, a document deleted) retires every entry of that entity, so a cached
  answer never hides a document that became ready after it;
- ingestion calls ``begin_invalidation`` before committing a change (barrier up,
  sequence bumped, entries holding the chunks deleted) and ``end_invalidation``
  after the commit (barrier down, sequence bumped, entries deleted again).
A search whose database snapshot predates the commit read its sequences before
the commit's bump, so it can never store its (stale) result afterwards.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .bindings.kv import KV
from .errors import KVConflict

BARRIER_SECONDS = 120.0
EPOCH_KEY = "epoch"
EPOCH_TTL = 10 * 365 * 86400.0  # for good; a KV that drops it retires every entry, which is safe


def _seq_key(entity: str) -> str:
    return f"seq:{entity}"


def _barrier_key(entity: str) -> str:
    return f"barrier:{entity}"


def result_key(key: str) -> str:
    return f"result:{key}"


def read_epoch(kv: KV) -> int:
    """The KV's epoch: a random number written once, the first element of every sequence tuple.

    A KV that loses its contents (a Redis restarted without persistence) starts its sequences
    again from 0, so a sequence alone could come back to a value that an in-process copy was
    computed at; the epoch it loses with them is drawn anew, and no such copy matches again.
    Two processes that both find it missing each write one: the last write wins and the
    other's reads and stores only miss.
    """
    epoch = kv.get(EPOCH_KEY)
    if epoch is None:
        epoch = secrets.randbits(52)
        kv.put(EPOCH_KEY, epoch, ttl=EPOCH_TTL)
    return int(epoch)


def read_sequences(kv: KV, entity_ids: Iterable[str]) -> tuple[int, ...]:
    """``(epoch, sequence of each entity ...)``, read before the database is: what an entry must match.
    One read of the KV for them all (a search over a hundred entities is one round trip to Redis)."""
    epoch, *sequences = kv.get_many([EPOCH_KEY, *(_seq_key(e) for e in entity_ids)])
    return (read_epoch(kv) if epoch is None else int(epoch), *(int(s or 0) for s in sequences))


def load(kv: KV, key: str, sequences: tuple[int, ...]) -> dict | None:
    """The stored result, if it was computed at exactly these (current) entity sequences."""
    return load_entry(kv, key, sequences)[0]


def load_entry(kv: KV, key: str, sequences: tuple[int, ...]) -> tuple[dict | None, float | None]:
    """``load``, with the entry's expiry (epoch seconds; None for entries stored without one)."""
    entry = kv.get(result_key(key))
    if entry is None or tuple(entry["sequences"]) != tuple(sequences):
        return None, None
    return entry["payload"], entry.get("expires")


@dataclass
class Entry:
    """A result to store: see ``store``."""

    key: str
    value: dict
    chunk_ids: list[str]
    entity_ids: list[str]
    sequences: tuple[int, ...]
    ttl: float


def store(kv: KV, key: str, value: dict, *, chunk_ids: Iterable[str], entity_ids: list[str],
          sequences: tuple[int, ...], ttl: float) -> bool:
    """Store a result unless its entities changed since ``sequences`` were read; True if stored."""
    return store_many(kv, [Entry(key, value, list(chunk_ids), entity_ids, tuple(sequences), ttl)])[0]


def store_many(kv: KV, entries: list[Entry]) -> list[bool]:
    """``store`` for each entry, in one transaction (each entry checked against its own sequences).

    A KV whose transactions are optimistic (Redis) raises ``KVConflict`` when an entity's sequence
    or barrier changed between the check and the commit: then nothing was stored.
    """
    try:
        return _store_many(kv, entries)
    except KVConflict:
        return [False] * len(entries)


def _store_many(kv: KV, entries: list[Entry]) -> list[bool]:
    stored = []
    with kv.transact():
        now = time.time()
        current: dict[str, tuple[int, bool]] = {}  # entity → (sequence, barrier up), read once per group
        epoch = kv.get(EPOCH_KEY)
        for entry in entries:
            for entity in entry.entity_ids:
                if entity not in current:
                    current[entity] = (int(kv.get(_seq_key(entity), 0)),
                                       float(kv.get(_barrier_key(entity), 0)) > now)
            state = [current[e] for e in entry.entity_ids]
            if (epoch, *(seq for seq, _ in state)) != tuple(entry.sequences) or any(up for _, up in state):
                stored.append(False)
                continue
            kv.put(result_key(entry.key), {"sequences": list(entry.sequences), "payload": entry.value,
                                           "expires": now + entry.ttl}, ttl=entry.ttl)
            kv.add_to_sets((_ref_key(c) for c in dict.fromkeys(entry.chunk_ids)), entry.key, ttl=entry.ttl)
            stored.append(True)
    return stored


class StoreWriter:
    """A process's result stores, in one thread of their own and in groups.

    Each store was a write transaction in a thread of asyncio's default pool: concurrent searches'
    stores queued on SQLite's write lock there (whose busy handler sleeps 1, 2, 5, 10 ... ms
    between tries), holding threads of the pool the query embedding also runs in. Here one
    thread writes, and the stores that arrive while it writes go together in the next
    transaction (no timer: a lone store never waits). Each caller still learns whether its
    own entry was stored; an error fails the whole group's callers, as ``store`` would each.
    """

    def __init__(self, kv: KV, *, max_group: int = 32) -> None:
        self.kv = kv
        self.max_group = max_group
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="cache-store")
        self._waiting: list[tuple[Entry, asyncio.Future]] = []
        self._running: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.groups = 0  # transactions made; with ``entries``, what tests and benchmarks read
        self.entries = 0

    async def store(self, entry: Entry) -> bool:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a test's successive loops: start afresh
            self._loop, self._waiting, self._running = loop, [], None
        future = loop.create_future()
        self._waiting.append((entry, future))
        if self._running is None or self._running.done():
            self._running = loop.create_task(self._run())
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiting:
            group, self._waiting = self._waiting[:self.max_group], self._waiting[self.max_group:]
            try:
                results = await loop.run_in_executor(self._thread, store_many, self.kv, [e for e, _ in group])
            except Exception as exc:
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
                continue
            except BaseException:
                for _, future in [*group, *self._waiting]:
                    future.cancel()
                self._waiting = []
                raise
            self.groups += 1
            self.entries += len(group)
            for (_, future), stored in zip(group, results, strict=True):
                if not future.done():
                    future.set_result(stored)


def _ref_key(chunk_id: str) -> str:
    return f"ref:{chunk_id}"


def _drop_entries(kv: KV, chunk_ids: list[str]) -> int:
    keys = kv.pop_sets(_ref_key(c) for c in chunk_ids)
    return kv.delete(*(result_key(k) for k in keys))


def begin_invalidation(kv: KV, entity_ids: Iterable[str], chunk_ids: Iterable[str],
                       *, hold_seconds: float = BARRIER_SECONDS) -> int:
    """Before committing a change to these chunks: stop cache writes, drop entries holding them."""
    entity_ids, chunk_ids = list(dict.fromkeys(entity_ids)), [str(c) for c in chunk_ids]
    with kv.transact():
        for entity in entity_ids:
            kv.put(_barrier_key(entity), time.time() + hold_seconds, ttl=hold_seconds)
            kv.incr(_seq_key(entity))
        return _drop_entries(kv, chunk_ids)


def end_invalidation(kv: KV, entity_ids: Iterable[str], chunk_ids: Iterable[str]) -> int:
    """After the commit: allow cache writes again, and drop anything written in between."""
    entity_ids, chunk_ids = list(dict.fromkeys(entity_ids)), [str(c) for c in chunk_ids]
    with kv.transact():
        for entity in entity_ids:
            kv.delete(_barrier_key(entity))
            kv.incr(_seq_key(entity))
        return _drop_entries(kv, chunk_ids)


class Invalidation:
    """Brackets a database commit that changes an entity's chunks or documents::

        async with cache.Invalidation(kv) as invalidation:
            async with db.transaction() as conn:
                ...  # lock, read the chunk ids the change touches
                await invalidation.begin([entity_id], chunk_ids)
                ...  # write
        invalidation.dropped  # cache entries removed

    ``begin`` runs inside the transaction, before the commit; ``end`` runs after the
    transaction is over (committed or not), only if ``begin`` ran. Called with no chunk ids
    it still retires every cached result of the entities (a new document is now ready).
    """

    def __init__(self, kv: KV) -> None:
        self.kv = kv
        self.dropped = 0
        self._begun: tuple[list[str], list[str]] | None = None

    async def begin(self, entity_ids: Iterable[str], chunk_ids: Iterable[str]) -> None:
        entity_ids, chunk_ids = list(entity_ids), [str(c) for c in chunk_ids]
        self.dropped += await asyncio.to_thread(begin_invalidation, self.kv, entity_ids, chunk_ids)
        self._begun = (entity_ids, chunk_ids)

    async def __aenter__(self) -> Invalidation:
        return self

    async def __aexit__(self, *exc_info) -> None:
        if self._begun is not None:
            entity_ids, chunk_ids = self._begun
            self._begun = None
            self.dropped += await asyncio.to_thread(end_invalidation, self.kv, entity_ids, chunk_ids)
