"""An in-process front for the exact cache: recent hits kept as objects, checked like the KV's.

An exact hit used to unpickle its whole entry from the KV (SQLite, shared by every process) on
each request: about a sixth of a hit's CPU. The front keeps the entries this process served
recently, each with the entity sequences it was computed at and its expiry, and serves one
only when the sequences the request has just read from the KV (``cache.read_sequences``, as
before, every request) are exactly those. Every change to an entity's chunks or documents, by
any process, bumps its sequence (``cache.Invalidation``), so a copy here can never outlive the
change: the same rule that makes the KV entry servable makes the copy servable. A copy also
lives no longer than its KV entry's expiry, and at most ``max_seconds`` (so a sequence key
evicted from the KV and counted up again cannot meet an old copy), and the front is bounded by the
memory its copies take (``max_bytes``, and at most ``max_entries`` copies; least recently served
dropped first).

The bound is memory, not a count: a copy's size is that of its payload as unpickled, with its JSON
and its telemetry columns. Measured (results/throughput/session12/hits12/front_memory.py, tracemalloc)
at 4.5-7.1 times its JSON's length: 35.5 KiB for 10 results with their text (JSON 6.8 KiB), 22.7
without text (3.2), 152 for 50 results with text (33.6). So a copy counts ``COPY_BYTES_PER_JSON_BYTE``
times its JSON, the upper end. It was 512 copies whatever their size: ~18 MiB of copies of 10
results with text, ~76 MiB of 50. The default, 24 MiB (``EDGEINDEX_SEARCH_FRONT_MB``), keeps what
512 copies of 10 results with text took (~500 copies), and a front of larger answers now holds fewer.
A front of 64 MiB (~1,400 such copies, the search worker's RSS +23 MB), large enough that the load
test's semantic phase (~750-970 answers cycled) no longer misses it, showed no gain in two A/B pairs
(CPU per semantic hit within the noise; results/throughput/README.md, twelfth session, hits12).

A copy also keeps what is made from its payload alone, once: its JSON (``encoded``, for
``request_memo.splice``) and the columns of the telemetry row it fixes (``telemetry``: the decision it
was made with, its results' JSON; routing/service.py ``answer_columns``). Both are the same
payload's, so they are served under the same rule and dropped with it.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from typing import Any

from ..runtime.http import encode_json
from .request_memo import encode_payload

COPY_BYTES_PER_JSON_BYTE = 7   # a copy's memory over its JSON's length, at most (measured: see above)
MAX_BYTES = int(float(os.environ.get("EDGEINDEX_SEARCH_FRONT_MB", "24")) * 1024 * 1024)
MAX_ENTRIES = 16_384           # a bound on the count too: tiny answers (k = 1) are ~1 KiB of JSON


class Copy:
    """One cached answer held by the front (``payload``: never mutated), and what is made from it."""

    __slots__ = ("sequences", "until", "payload", "encoded", "size", "telemetry")

    def __init__(self, sequences: tuple[int, ...], until: float, payload: dict) -> None:
        self.sequences = sequences
        self.until = until
        self.payload = payload
        # The payload's JSON, for request_memo.splice (None if it cannot be spliced: see
        # request_memo.encode_payload). Made now: it weighs the copy, and the hit that brought the copy
        # in sends it at once.
        self.encoded = encode_payload(payload)
        self.size = COPY_BYTES_PER_JSON_BYTE * len(self.encoded if self.encoded is not None
                                                   else encode_json(payload))
        self.telemetry: Any = None   # the row's answer columns, made on the first hit (SearchService.telemetry)


class LocalExactCache:
    def __init__(self, *, max_bytes: int = MAX_BYTES, max_entries: int = MAX_ENTRIES,
                 max_seconds: float = 60.0) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.max_seconds = max_seconds
        self._entries: OrderedDict[str, Copy] = OrderedDict()
        self.bytes = 0   # the copies' sizes (Copy.size), summed

    def get(self, key: str, sequences: tuple[int, ...]) -> dict | None:
        entry = self._valid(key, sequences)
        return entry.payload if entry is not None else None

    def get_copy(self, key: str, sequences: tuple[int, ...]) -> Copy | None:
        """``get``, as the copy itself: its payload with its JSON and its telemetry columns."""
        return self._valid(key, sequences)

    def _valid(self, key: str, sequences: tuple[int, ...]) -> Copy | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.sequences != sequences or time.time() >= entry.until:
            self._drop(key)   # retired (the entity changed) or expired: the KV decides again
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, sequences: tuple[int, ...], payload: dict, expires: float) -> None:
        copy = Copy(tuple(sequences), min(expires, time.time() + self.max_seconds), payload)
        self._drop(key)
        self._entries[key] = copy
        self.bytes += copy.size
        while (self.bytes > self.max_bytes or len(self._entries) > self.max_entries) and len(self._entries) > 1:
            _, oldest = self._entries.popitem(last=False)   # the newest stays, even alone over the bound
            self.bytes -= oldest.size

    def _drop(self, key: str) -> None:
        copy = self._entries.pop(key, None)
        if copy is not None:
            self.bytes -= copy.size

    def __len__(self) -> int:
        return len(self._entries)
