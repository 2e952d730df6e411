"""What a repeated ``POST /search`` body need not redo: its parse, and its answer's encoding.

An exact-cache hit is ~0.25 ms of one core, and under 8 agents the queue of hits ahead of a
request is its latency. About a fifth of a hit is turning the same bytes into the same request
(JSON decode and checks, pydantic, the strategy's resolution, the cache key's canonical JSON and
digest) and the answer into JSON. Neither depends on anything but the bytes (and settings fixed
at start-up), so both are kept:

- ``ParsedMemo``: body bytes → the request as ``parse`` and ``resolve`` made it (a frozen
  model), the decision so far (copied per search: later stages fill it in) and the cache keys
  per entity set. Only bodies that parsed are kept (an invalid body raises every time); the
  scope's entity sequences, the exact entry and the key's grant are still checked per request,
  so nothing here can serve an answer the cache itself would refuse. Bounded in entries and in
  the bytes of one body.
- ``splice``: the JSON of ``{**payload, **extra}`` from the payload's JSON kept once: the
  cached part of an exact hit is encoded when it enters the local exact cache and never again; only the
  per-request fields (count, cache, took_ms, search_id) are encoded per answer. Byte for byte
  what ``encode_json`` of the merged dict gives (the tests compare them).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..json_codec import ORJSON_OPTIONS, encode_default, encode_json
from .cache_keys import CacheKeys

MAX_BODY_BYTES = 4096   # longer bodies (many filters, long queries) are parsed every time
MAX_ENTRIES = 1024      # ~4 MB at most, with each entry's request and keys


@dataclass
class Parsed:
    request: Any                 # SearchRequest after parse + resolve (frozen)
    decision: Any                # the Decision resolve made, before any stage filled it in
    keys: dict[tuple[str, ...], CacheKeys] = field(default_factory=dict)  # per entity set

    def fresh_decision(self) -> Any:
        return self.decision.copy()   # stages set features, version, bin: never on the memo's


class ParsedMemo:
    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.max_entries = max_entries
        self.max_body_bytes = max_body_bytes
        self._entries: OrderedDict[bytes, Parsed] = OrderedDict()

    def get(self, raw: bytes) -> Parsed | None:
        entry = self._entries.get(raw)
        if entry is not None:
            self._entries.move_to_end(raw)
        return entry

    def put(self, raw: bytes, request: Any, decision: Any) -> Parsed | None:
        if len(raw) > self.max_body_bytes:
            return None
        entry = Parsed(request, decision.copy())
        self._entries[raw] = entry
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)


def encode_payload(payload: dict) -> bytes | None:
    """The payload's JSON kept for ``splice``, or None when it could not be spliced: what orjson
    refuses goes through the standard library's encoder (``encode_json``), whose separators differ."""
    try:  # encode_json's own call, without its fallback
        body = orjson.dumps(payload, default=encode_default, option=ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return None
    return body if body[:1] == b"{" and body[-1:] == b"}" and len(body) > 2 else None


def splice(payload_json: bytes, payload: dict, extra: dict) -> bytes:
    """``encode_json({**payload, **extra})`` from ``encode_json(payload)``: extra's keys come after
    the payload's in a merge, unless the payload has one already (then encoded whole)."""
    if any(name in payload for name in extra):
        return encode_json({**payload, **extra})
    tail = encode_json(extra)
    return payload_json[:-1] + b"," + tail[1:]
