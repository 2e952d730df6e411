"""Give freed native memory back to the operating system after a model batch.

torch allocates each batch's activations with malloc, sized by the batch's shape (texts x longest
text), which changes from one ingestion batch to the next. glibc keeps what is freed inside its
heaps for reuse, and with blocks of ever-different sizes that free space fragments and keeps
growing: the soak saw the ingest worker's RSS climb for the whole run while Python's own objects
(tracemalloc) stayed flat. ``malloc_trim(0)`` after a batch returns the free pages at the cost
of a few milliseconds per batch; off glibc it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

_trim = None
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
