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

A copy also keeps what is made from its payload alone, once: its JSON (``encoded``, for
``hit_path.splice``) and the columns of the telemetry row it fixes (``telemetry``: the decision it
was made with, its results' JSON; routing/service.py ``answer_columns``). Both are the same
payload's, so they are served under the same rule and dropped with it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from .hit_path import encode_payload


class Copy:
    """One cached answer held by the front (``payload``: never mutated), and what is made from it."""

    __slots__ = ("sequences", "until", "payload", "_encoded", "telemetry")

    def __init__(self, sequences: tuple[int, ...], until: float, payload: dict) -> None:
        self.sequences = sequences
        self.until = until
        self.payload = payload
        self._encoded: bytes | None | bool = False   # False: not encoded yet; None: cannot be spliced
        self.telemetry: Any = None   # the row's answer columns, made on the first hit (SearchService.telemetry)

    @property
    def encoded(self) -> bytes | None:
        """The payload's JSON (encoded on first use; None if it cannot be spliced, see
        hit_path.encode_payload)."""
        if self._encoded is False:
            self._encoded = encode_payload(self.payload)
        return self._encoded


class ExactFront:
    def __init__(self, *, max_entries: int = 512, max_seconds: float = 60.0) -> None:
        self.max_entries = max_entries
        self.max_seconds = max_seconds
        self._entries: OrderedDict[str, Copy] = OrderedDict()

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
            del self._entries[key]   # retired (the entity changed) or expired: the KV decides again
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, sequences: tuple[int, ...], payload: dict, expires: float) -> None:
        self._entries[key] = Copy(tuple(sequences), min(expires, time.time() + self.max_seconds), payload)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
