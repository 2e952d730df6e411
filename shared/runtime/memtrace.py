"""Env-gated memory trace of one worker process (diagnostics for the soak, off by default).

Set ``EDGEINDEX_MEMTRACE_FILE`` (a path; ``{pid}`` is replaced) and, optionally,
``EDGEINDEX_MEMTRACE_SECONDS`` (default 30). Every interval one JSON line is appended: the
process's RSS, what Python's own objects hold (tracemalloc), what glibc malloc holds in use and
keeps free inside its heaps (``mallinfo2``), and the ten source lines whose Python allocations
grew most since the first sample. RSS growing while the traced and in-use figures stay flat is
native memory (the model runtime or allocator), not a Python structure of ours.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import time
import tracemalloc

log = logging.getLogger(__name__)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def malloc_stats() -> dict | None:
    """glibc's view of its heaps in MB (None off glibc): in use, free but kept, mmapped."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return None
    mb = 2 ** 20
    return {"heap_mb": round(info.arena / mb, 1), "in_use_mb": round(info.uordblks / mb, 1),
            "free_kept_mb": round(info.fordblks / mb, 1), "mmapped_mb": round(info.hblkhd / mb, 1)}


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20, 1)


def start_if_enabled(environ=os.environ) -> asyncio.Task | None:
    path = environ.get("EDGEINDEX_MEMTRACE_FILE")
    if not path:
        return None
    return asyncio.create_task(_trace(path.replace("{pid}", str(os.getpid())),
                                      float(environ.get("EDGEINDEX_MEMTRACE_SECONDS", "30"))))


async def _trace(path: str, every: float) -> None:
    tracemalloc.start(3)
    first = tracemalloc.take_snapshot()
    started = time.monotonic()
    while True:
        await asyncio.sleep(every)
        try:
            snap = tracemalloc.take_snapshot()
            top = snap.compare_to(first, "lineno")[:10]
            traced, _ = tracemalloc.get_traced_memory()
            row = {"t": round(time.monotonic() - started), "rss_mb": rss_mb(),
                   "python_traced_mb": round(traced / 2 ** 20, 1), "malloc": malloc_stats(),
                   "top_growth": [f"{s.size_diff / 1024:.0f} KiB {s.count_diff:+d} "
                                  f"{s.traceback[0].filename}:{s.traceback[0].lineno}" for s in top]}
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")
        except Exception:
            log.warning("memtrace sample failed", exc_info=True)
