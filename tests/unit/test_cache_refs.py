"""The exact cache's reverse map (chunk → entries holding it) in the KV's sets: one row per member.

A store adds its key to each chunk's set without reading the set; invalidating a chunk drops
exactly the entries that hold it; a refused store leaves no member behind; members expire with
their entry and expired ones are deleted (the map stays bounded by what was stored within the TTL).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from edgeindex import cache
from edgeindex.bindings.kv import DiskKV

ENTITY = "e1"


@pytest.fixture
def kv(tmp_path):
    store = DiskKV(tmp_path / "kv", namespace="cache")
    yield store
    store.close()


def put(kv, key, chunk_ids, *, ttl=600.0):
    return cache.store(kv, key, {"results": chunk_ids}, chunk_ids=chunk_ids, entity_ids=[ENTITY],
                       sequences=cache.read_sequences(kv, [ENTITY]), ttl=ttl)


def test_invalidating_a_chunk_drops_exactly_the_entries_that_hold_it(kv, tmp_path):
    assert put(kv, "a", ["c1", "c2"]) and put(kv, "b", ["c2", "c3"]) and put(kv, "c", ["c3"])
    other = DiskKV(tmp_path / "kv", namespace="cache")  # another process's connection, in effect
    try:
        assert other.set_members("ref:c2") == {"a", "b"}
        assert cache.begin_invalidation(other, [ENTITY], ["c1"]) == 1
    finally:
        other.close()
    assert kv.get(cache.result_key("a")) is None
    assert kv.get(cache.result_key("b")) is not None and kv.get(cache.result_key("c")) is not None
    assert kv.set_members("ref:c1") == set()       # the chunk's set went with its entries
    assert kv.set_members("ref:c2") == {"a", "b"}  # a set names keys, dropped or not: deleting one is a no-op
    assert cache.end_invalidation(kv, [ENTITY], ["c2", "c3"]) == 2
    assert kv.set_rows() == 0


def test_a_refused_store_adds_no_member(kv):
    stale = cache.read_sequences(kv, [ENTITY])
    cache.begin_invalidation(kv, [ENTITY], [])
    assert not cache.store(kv, "late", {"results": ["c1"]}, chunk_ids=["c1"], entity_ids=[ENTITY],
                           sequences=stale, ttl=600)
    assert kv.set_rows() == 0


def test_many_stores_of_one_chunk_stay_one_row_each_and_expire(kv):
    for i in range(300):
        assert put(kv, f"k{i}", ["hot", f"c{i}"], ttl=60)
    put(kv, "k0", ["hot", "c0"], ttl=60)  # the same entry again: the same rows, their expiry renewed
    assert kv.set_rows() == 600
    assert len(kv.set_members("ref:hot")) == 300
    assert kv.prune_sets(now=time.time() + 30) == 0        # nothing expired yet
    assert kv.prune_sets(now=time.time() + 61) == 600      # the entries' TTL is the members' TTL
    assert kv.set_rows() == 0


def test_an_expired_member_is_not_returned(kv):
    kv.add_to_sets(["ref:x"], "gone", ttl=-1.0)
    kv.add_to_sets(["ref:x"], "live", ttl=60.0)
    assert kv.set_members("ref:x") == {"live"}
    assert kv.pop_sets(["ref:x"]) == {"live"}
    assert kv.set_rows() == 0


def test_sets_do_not_leak_between_namespaces(kv, tmp_path):
    other = DiskKV(tmp_path / "kv", namespace="other")
    try:
        other.add_to_sets(["ref:c1"], "theirs", ttl=60.0)
        kv.add_to_sets(["ref:c1"], "ours", ttl=60.0)
        assert kv.pop_sets(["ref:c1"]) == {"ours"}
        assert other.set_members("ref:c1") == {"theirs"} and other.set_rows() == 1
    finally:
        other.close()


async def test_concurrent_stores_go_in_one_group_each_checked_on_its_own(kv):
    writer = cache.StoreWriter(kv)
    seq = cache.read_sequences(kv, [ENTITY])
    fresh = [cache.Entry(f"k{i}", {"i": i}, [f"c{i}", "shared"], [ENTITY], seq, 600.0) for i in range(8)]
    moved = cache.Entry("moved", {"i": -1}, ["c0"], ["e2"], (5,), 600.0)       # e2's sequence is 0, not 5
    cache.begin_invalidation(kv, ["e3"], [])                                     # e3's barrier is up
    held = cache.Entry("held", {"i": -2}, ["c0"], ["e3"], cache.read_sequences(kv, ["e3"]), 600.0)
    cache.end_invalidation(kv, ["e4"], [])                                       # e4 moved on, no barrier
    other = cache.Entry("other", {"i": 4}, ["c4"], ["e4"], cache.read_sequences(kv, ["e4"]), 600.0)
    results = await asyncio.gather(*(writer.store(e) for e in [*fresh, moved, held, other]))
    assert results == [True] * 8 + [False, False, True]
    assert (writer.groups, writer.entries) == (1, 11)  # all arrived while none was written: one transaction
    assert all(cache.load(kv, f"k{i}", seq) == {"i": i} for i in range(8))
    assert kv.get(cache.result_key("moved")) is None and kv.get(cache.result_key("held")) is None
    assert kv.set_members("ref:shared") == {f"k{i}" for i in range(8)} and kv.set_members("ref:c0") == {"k0"}
