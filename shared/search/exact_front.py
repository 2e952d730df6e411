"""An in-process front for the exact cache: recent hits kept as objects, checked like the KV's.

An exact hit used to unpickle its whole entry from the KV (SQLite, shared by every process) on
each request: about a sixth of a hit's CPU. The front keeps the entries this process served
recently, each with the entity sequences it was computed at and its expiry, and serves one
only when the sequences the request has just read from the KV (``cache.read_sequences``, as
before, every request) are exactly those. Every change to an entity's chunks or documents, by
any process, bumps its sequence (``cache.Invalidation``), so a copy here can never outlive the
change: the same rule that makes the KV entry servable makes the copy servable. A copy also
lives no longer than its KV entry's expiry, and at most ``max_seconds`` (so a sequence key
evicted from the KV and counted up again cannot meet an old copy), and the front holds at most
``max_entries`` copies (least recently served dropped first).

A copy also keeps its payload's JSON once encoded (``encoded``, for ``hit_path.splice``): it is
the same payload, so it is served under the same rule and dropped with it.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from .hit_path import encode_payload


class _Entry:
    __slots__ = ("sequences", "until", "payload", "encoded")

    def __init__(self, sequences: tuple[int, ...], until: float, payload: dict) -> None:
        self.sequences = sequences
        self.until = until
        self.payload = payload
        self.encoded: bytes | None | bool = False   # False: not encoded yet; None: cannot be spliced


class ExactFront:
    def __init__(self, *, max_entries: int = 512, max_seconds: float = 60.0) -> None:
        self.max_entries = max_entries
        self.max_seconds = max_seconds
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def get(self, key: str, sequences: tuple[int, ...]) -> dict | None:
        entry = self._valid(key, sequences)
        return entry.payload if entry is not None else None

    def get_encoded(self, key: str, sequences: tuple[int, ...]) -> tuple[dict, bytes | None] | None:
        """``get``, with the payload's JSON (encoded on the copy's first use; None if it cannot be
        spliced, see hit_path.encode_payload)."""
        entry = self._valid(key, sequences)
        if entry is None:
            return None
        if entry.encoded is False:
            entry.encoded = encode_payload(entry.payload)
        return entry.payload, entry.encoded

    def _valid(self, key: str, sequences: tuple[int, ...]) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.sequences != sequences or time.time() >= entry.until:
            del self._entries[key]   # retired (the entity changed) or expired: the KV decides again
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, sequences: tuple[int, ...], payload: dict, expires: float) -> None:
        self._entries[key] = _Entry(tuple(sequences), min(expires, time.time() + self.max_seconds), payload)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
