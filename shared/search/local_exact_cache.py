"""The exact cache's in-process tier: recent hits kept as objects, so a hit skips unpickling its KV entry
(about a sixth of an exact hit's CPU).

A copy is served only when the entity sequences the request has just read from the KV
(``cache.read_sequences``) are exactly those it was computed at: every change to an entity, by any
process, bumps its sequence (``cache.Invalidation``), so a copy cannot outlive the change, by the same
rule that makes the KV entry servable. A copy lives no longer than its KV entry and at most
``max_seconds`` (so a sequence key evicted and counted up again cannot meet an old copy).

Bounded by memory (``max_bytes``, 24 MiB: ~500 answers of 10 results
with text) and count (``max_entries``), least recently served first out. A copy counts
``COPY_BYTES_PER_JSON_BYTE`` times its JSON (tracemalloc: 4.5-7x). It also keeps, made once, its JSON
(``encoded``, for ``request_memo.splice``) and its telemetry columns (routing/service.py ``answer_columns``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from ..json_codec import encode_json
from .request_memo import encode_payload

COPY_BYTES_PER_JSON_BYTE = 7   # a copy's memory over its JSON's length, at most (see above)
MAX_BYTES = 24 * 1024 * 1024   # ~500 copies of 10 results with their text
MAX_ENTRIES = 16_384           # a bound on the count too: tiny answers (k = 1) are ~1 KiB of JSON


class Copy:
    """One cached answer held by the tier (``payload``: never mutated), and what is made from it."""

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
