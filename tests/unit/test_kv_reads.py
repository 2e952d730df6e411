"""A KV read never waits for a writer: the search worker reads the cache on its event loop."""

from __future__ import annotations

import threading
import time

from edgeindex.bindings.kv import DiskKV


def test_a_read_does_not_wait_for_another_process_writing(tmp_path):
    writer, reader = DiskKV(tmp_path / "kv", namespace="t"), DiskKV(tmp_path / "kv", namespace="t")
    try:
        writer.put("result:a", {"payload": 1})
        assert reader.get("result:a") == {"payload": 1}
        holding, release = threading.Event(), threading.Event()

        def write() -> None:
            with writer.transact():  # a store or an invalidation in progress: the write lock is held
                writer.put("seq:e", 1)
                holding.set()
                release.wait(10)

        thread = threading.Thread(target=write)
        thread.start()
        try:
            assert holding.wait(5)
            started = time.monotonic()
            # a read that wrote (eviction by last use records the access time) would wait for the
            # lock here, up to the KV's 5 s timeout, and then fail
            assert reader.get("result:a") == {"payload": 1}
            assert reader.get("seq:e", 0) == 0  # the uncommitted write is not seen
            assert time.monotonic() - started < 1.0
        finally:
            release.set()
            thread.join()
    finally:
        writer.close()
        reader.close()
