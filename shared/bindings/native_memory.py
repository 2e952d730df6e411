"""Give freed native memory back to the operating system after a model batch.

torch allocates each batch's activations with malloc, sized by the batch's shape (texts x longest
text), which changes from one ingestion batch to the next. glibc keeps what is freed inside its
heaps for reuse, and with blocks of ever-different sizes that free space fragments and keeps
growing: a long-running ingest worker's RSS climbs while Python's own objects (tracemalloc) stay
flat. ``malloc_trim(0)`` after a batch returns the free pages at the cost
of a few milliseconds per batch; off glibc it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

_libc = _trim = None
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _trim = _libc.malloc_trim
    _trim.argtypes = [ctypes.c_size_t]
    _trim.restype = ctypes.c_int
except (OSError, AttributeError):  # musl, macOS: nothing to trim this way
    _trim = None


def trim() -> bool:
    """Release free heap memory to the OS; True when some was released."""
    return bool(_trim(0)) if _trim is not None else False


M_MMAP_THRESHOLD = -3  # mallopt parameter (malloc.h)
# glibc's own ceiling for its dynamic threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit). At glibc's
# default of 1 MiB every activation block of a batch of 8 texts (1-4 MiB) is a fresh mmap, faulted in
# page by page and unmapped at its free: 3,000+ page faults and 9-12 ms of system CPU per text in the
# model's thread, against ~1 ms at 32 MiB. Blocks below it go to
# the heap, whose free pages malloc_trim returns after each model call (LocalEmbedder._encode).
MMAP_THRESHOLD_BYTES = 32 << 20


def fix_mmap_threshold(size: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Serve every block of ``size`` bytes or more with its own mmap, returned to the OS on free.

    glibc starts at 128 KiB but raises the threshold each time such a block is freed (up to
    32 MiB), after which torch's batch-sized activations land in the heap and stay there as
    fragmented free space. A fixed threshold turns that dynamic raise off. Process-wide: the
    ingest worker (batches of ever-different shapes) calls it at start-up; True when applied.
    """
    if _libc is None:
        return False
    try:
        return bool(_libc.mallopt(M_MMAP_THRESHOLD, size))
    except AttributeError:
        return False
