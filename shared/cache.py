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
import time
from collections.abc import Iterable

from .bindings.kv import KV

BARRIER_SECONDS = 120.0


def _seq_key(entity: str) -> str:
    return f"seq:{entity}"


def _barrier_key(entity: str) -> str:
    return f"barrier:{entity}"


def result_key(key: str) -> str:
    return f"result:{key}"


def read_sequences(kv: KV, entity_ids: Iterable[str]) -> tuple[int, ...]:
    return tuple(int(kv.get(_seq_key(e), 0)) for e in entity_ids)


def load(kv: KV, key: str, sequences: tuple[int, ...]) -> dict | None:
    """The stored result, if it was computed at exactly these (current) entity sequences."""
    return load_entry(kv, key, sequences)[0]


def load_entry(kv: KV, key: str, sequences: tuple[int, ...]) -> tuple[dict | None, float | None]:
    """``load``, with the entry's expiry (epoch seconds; None for entries stored without one)."""
    entry = kv.get(result_key(key))
    if entry is None or tuple(entry["sequences"]) != tuple(sequences):
        return None, None
    return entry["payload"], entry.get("expires")


def store(kv: KV, key: str, value: dict, *, chunk_ids: Iterable[str], entity_ids: list[str],
          sequences: tuple[int, ...], ttl: float) -> bool:
    """Store a result unless its entities changed since ``sequences`` were read; True if stored."""
    chunk_ids = list(dict.fromkeys(chunk_ids))
    now = time.time()
    with kv.transact():
        if read_sequences(kv, entity_ids) != tuple(sequences):
            return False
        if any(float(kv.get(_barrier_key(e), 0)) > now for e in entity_ids):
            return False
        kv.put(result_key(key), {"sequences": list(sequences), "payload": value, "expires": now + ttl}, ttl=ttl)
        kv.add_to_sets((_ref_key(c) for c in chunk_ids), key, ttl=ttl)
    return True


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
