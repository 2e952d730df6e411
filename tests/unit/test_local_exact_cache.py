"""The exact cache's in-process tier (search/local_exact_cache.py): a copy is served only at the
sequences it was computed at, never past its expiry, and the tier stays bounded."""

from __future__ import annotations

import time

from edgeindex.runtime.http import encode_json
from edgeindex.search.local_exact_cache import COPY_BYTES_PER_JSON_BYTE, LocalExactCache


def test_a_copy_is_served_only_at_its_sequences_and_retired_by_any_other():
    local = LocalExactCache()
    local.put("k", (3, 7), {"results": ["a"]}, time.time() + 100)
    assert local.get("k", (3, 7)) == {"results": ["a"]}
    assert local.get("k", (3, 8)) is None      # an entity changed: retired ...
    assert local.get("k", (3, 7)) is None      # ... and gone, not served again at the old sequences
    assert local.get("other", (3, 7)) is None


def test_a_copy_expires_with_its_kv_entry_and_after_max_seconds():
    local = LocalExactCache(max_seconds=100.0)
    local.put("k", (1,), {"results": []}, time.time() - 0.001)  # the KV entry's expiry has passed
    assert local.get("k", (1,)) is None
    local = LocalExactCache(max_seconds=0.0)
    local.put("k", (1,), {"results": []}, time.time() + 100)
    assert local.get("k", (1,)) is None


def test_the_local_cache_keeps_the_most_recently_served_copies_only():
    local = LocalExactCache(max_entries=2)
    until = time.time() + 100
    local.put("a", (1,), {"n": 1}, until)
    local.put("b", (1,), {"n": 2}, until)
    assert local.get("a", (1,)) == {"n": 1}    # "a" served last: "b" is the oldest
    local.put("c", (1,), {"n": 3}, until)
    assert len(local) == 2
    assert local.get("b", (1,)) is None
    assert local.get("a", (1,)) == {"n": 1} and local.get("c", (1,)) == {"n": 3}


def test_the_local_cache_is_bounded_by_the_memory_its_copies_take():
    until = time.time() + 100
    small = {"results": [{"text": "x" * 100}]}
    large = {"results": [{"text": "x" * 1000}]}
    probe = LocalExactCache()
    probe.put("s", (1,), small, until)
    small_size = probe.bytes
    assert small_size == COPY_BYTES_PER_JSON_BYTE * len(encode_json(small))
    local = LocalExactCache(max_bytes=3 * small_size)
    for key in "abc":
        local.put(key, (1,), small, until)
    assert len(local) == 3 and local.bytes == 3 * small_size
    local.put("big", (1,), large, until)      # weighs more than the three together: they go, oldest first
    assert len(local) == 1 and local.get("a", (1,)) is None and local.get("big", (1,)) == large
    local = LocalExactCache(max_bytes=3 * small_size)
    for key in "abc":
        local.put(key, (1,), small, until)
    assert local.get("a", (2,)) is None       # retired: its bytes are no longer counted ...
    local.put("d", (1,), small, until)        # ... so the next copy fits beside the other two
    assert local.get("b", (1,)) == small and local.get("c", (1,)) == small and local.get("d", (1,)) == small
    local.put("d", (1,), small, until)        # stored again: counted once
    assert local.bytes == 3 * small_size
