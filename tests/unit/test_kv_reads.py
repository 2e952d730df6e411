"""The KV binding's reads never wait for a writer: a search reads its entities' sequences and the
exact-cache entry on every request, while other processes store results and bump sequences."""

from __future__ import annotations

import time

from edgeindex.bindings.kv import DiskKV


def test_a_read_does_not_wait_for_another_connections_write_transaction(tmp_path):
    writer = DiskKV(tmp_path / "kv", namespace="cache")
    reader = DiskKV(tmp_path / "kv", namespace="cache")  # another process's connection, in effect
    writer.put("seq:e1", 1)
    try:
        with writer.transact():  # BEGIN IMMEDIATE: holds the write lock until the block ends
            writer.put("seq:e1", 2)
            started = time.perf_counter()
            assert reader.get("seq:e1") == 1  # the last committed value, at once
            waited = time.perf_counter() - started
        # an eviction policy that records access times turns every get into a write transaction,
        # which would block here for the lock's whole timeout (5 s) and then raise
        assert waited < 1.0
        assert reader.get("seq:e1") == 2
    finally:
        writer.close()
        reader.close()
