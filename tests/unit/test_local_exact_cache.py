"""The exact cache's in-process front (search/local_exact_cache.py): a copy is served only at the
sequences it was computed at, never past its expiry, and the front stays bounded."""

from __future__ import annotations

import time

from edgeindex.runtime.http import encode_json
from edgeindex.search.local_exact_cache import COPY_BYTES_PER_JSON_BYTE, LocalExactCache


def test_a_copy_is_served_only_at_its_sequences_and_retired_by_any_other():
    front = LocalExactCache()
    front.put("k", (3, 7), {"results": ["a"]}, time.time() + 100)
    assert front.get("k", (3, 7)) == {"results": ["a"]}
    assert front.get("k", (3, 8)) is None      # an entity changed: retired ...
    assert front.get("k", (3, 7)) is None      # ... and gone, not served again at the old sequences
    assert front.get("other", (3, 7)) is None


def test_a_copy_expires_with_its_kv_entry_and_after_max_seconds():
    front = LocalExactCache(max_seconds=100.0)
    front.put("k", (1,), {"results": []}, time.time() - 0.001)  # the KV entry's expiry has passed
    assert front.get("k", (1,)) is None
    front = LocalExactCache(max_seconds=0.0)
    front.put("k", (1,), {"results": []}, time.time() + 100)
    assert front.get("k", (1,)) is None


def test_the_front_keeps_the_most_recently_served_copies_only():
    front = LocalExactCache(max_entries=2)
    until = time.time() + 100
    front.put("a", (1,), {"n": 1}, until)
    front.put("b", (1,), {"n": 2}, until)
    assert front.get("a", (1,)) == {"n": 1}    # "a" served last: "b" is the oldest
    front.put("c", (1,), {"n": 3}, until)
    assert len(front) == 2
    assert front.get("b", (1,)) is None
    assert front.get("a", (1,)) == {"n": 1} and front.get("c", (1,)) == {"n": 3}


def test_the_front_is_bounded_by_the_memory_its_copies_take():
    until = time.time() + 100
    small = {"results": [{"text": "x" * 100}]}
    large = {"results": [{"text": "x" * 1000}]}
    probe = LocalExactCache()
    probe.put("s", (1,), small, until)
    small_size = probe.bytes
    assert small_size == COPY_BYTES_PER_JSON_BYTE * len(encode_json(small))
    front = LocalExactCache(max_bytes=3 * small_size)
    for key in "abc":
        front.put(key, (1,), small, until)
    assert len(front) == 3 and front.bytes == 3 * small_size
    front.put("big", (1,), large, until)      # weighs more than the three together: they go, oldest first
    assert len(front) == 1 and front.get("a", (1,)) is None and front.get("big", (1,)) == large
    front = LocalExactCache(max_bytes=3 * small_size)
    for key in "abc":
        front.put(key, (1,), small, until)
    assert front.get("a", (2,)) is None       # retired: its bytes are no longer counted ...
    front.put("d", (1,), small, until)        # ... so the next copy fits beside the other two
    assert front.get("b", (1,)) == small and front.get("c", (1,)) == small and front.get("d", (1,)) == small
    front.put("d", (1,), small, until)        # stored again: counted once
    assert front.bytes == 3 * small_size
