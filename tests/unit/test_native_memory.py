"""The ingest worker's native-memory settings take effect (glibc only: elsewhere they are no-ops)."""

import ctypes
import subprocess
import sys

import pytest

from edgeindex.bindings import native_memory
from edgeindex.runtime.memtrace import malloc_stats, rss_mb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or malloc_stats() is None,
                                reason="glibc malloc only")
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
MB = 2 ** 20


MAPPED_CHECK = """
import ctypes
from edgeindex.bindings import native_memory
from edgeindex.runtime.memtrace import malloc_stats
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
MB = 2 ** 20
{setup}
before = malloc_stats()["mmapped_mb"]
block = libc.malloc({block_mb} * MB)
print(malloc_stats()["mmapped_mb"] - before)
libc.free(block)
"""


def mapped_mb_for_block(setup: str, block_mb: int) -> float:
    """MB mmapped for one malloc of block_mb MiB after `setup`, in a fresh process, as the ingest
    worker sets its threshold at start-up: the malloc state a long test session leaves behind (other
    tests' arenas, torch's allocations) is not the worker's."""
    script = MAPPED_CHECK.format(setup=setup, block_mb=block_mb)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.strip())  # rounded to 0.1


def test_fixed_threshold_keeps_large_blocks_out_of_the_heap_after_a_larger_free():
    # glibc raises its threshold to the size of a freed mmapped block: without the fix, the 8 MiB
    # block that follows a 16 MiB free would land in the heap (and its memory stay there).
    setup = "libc.free(libc.malloc(16 * MB))\nassert native_memory.fix_mmap_threshold(1 * MB)"
    assert mapped_mb_for_block(setup, 8) >= 7.5


def test_trim_returns_freed_heap_pages():
    native_memory.trim()
    # 64 KiB blocks (heap, not mmap), every other one freed: free holes between live blocks,
    # which free() itself never returns (fragmentation, as torch's activations leave it)
    blocks = [libc.malloc(64 * 1024) for _ in range(1600)]
    for block in blocks:
        ctypes.memset(block, 1, 64 * 1024)
    for block in blocks[::2]:
        libc.free(block)
    try:
        held = rss_mb()
        native_memory.trim()
        assert held - rss_mb() >= 30
    finally:
        for block in blocks[1::2]:
            libc.free(block)


def test_the_worker_s_threshold_serves_a_batch_sized_block_from_the_heap():
    # A batch of 8 texts allocates activation blocks of 1-4 MiB. Each served by a fresh mmap is
    # faulted in page by page and unmapped at its free: ~9-12 ms of system CPU per text in the
    # model's thread. From the heap (trimmed after
    # each model call) it costs ~1.
    assert mapped_mb_for_block("assert native_memory.fix_mmap_threshold()", 4) == 0.0
