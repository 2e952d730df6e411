"""Result cache storage in KV, with a reverse map chunk → cache entries.

Both caches (exact and semantic) store their results here under ``result:<key>``;
the semantic index only maps query embeddings to such keys, so deleting a KV
entry invalidates it for both.

Correctness when chunks change (no request may ever see a deleted chunk):
- every entry records the chunk ids it holds in ``ref:<chunk id>`` sets;
- each entity has a sequence number ``seq:<entity>`` and a write barrier
  ``barrier:<entity>`` (a deadline, so a crashed ingest cannot block caching
  forever);
- a search reads the sequences of its entities *before* querying the database
  and stores its result only if, atomically, no barrier is up and no sequence
  moved; otherwise it just returns the result uncached;
- ingestion calls ``begin_invalidation`` before committing a change (barrier up,
  sequence bumped, entries holding the chunks deleted) and ``end_invalidation``
  after the commit (barrier down, sequence bumped, entries deleted again).
A search whose database snapshot predates the commit read its sequences before
the commit's bump, so it can never store its (stale) result afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

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


def load(kv: KV, key: str) -> dict | None:
    return kv.get(result_key(key))


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
        kv.put(result_key(key), value, ttl=ttl)
        for chunk_id in chunk_ids:
            refs = kv.get(f"ref:{chunk_id}") or set()
            refs.add(key)
            kv.put(f"ref:{chunk_id}", refs, ttl=ttl)
    return True


def _drop_entries(kv: KV, chunk_ids: list[str]) -> int:
    keys: set[str] = set()
    for chunk_id in chunk_ids:
        keys |= kv.get(f"ref:{chunk_id}") or set()
    dropped = kv.delete(*(result_key(k) for k in keys))
    kv.delete(*(f"ref:{c}" for c in chunk_ids))
    return dropped


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


def stats(kv: KV) -> dict[str, Any]:
    return {"results": len(kv.list("result:")), "refs": len(kv.list("ref:"))}
