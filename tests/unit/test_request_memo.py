"""What a repeated POST /search body skips (search/request_memo.py): the spliced JSON is byte for byte
the merged dict's, the memo is bounded, and the local exact cache's encoded copy goes with its copy."""

from __future__ import annotations

import datetime
import time

import numpy as np
from edgeindex.json_codec import encode_json
from edgeindex.routing.service import Decision
from edgeindex.search.local_exact_cache import LocalExactCache
from edgeindex.search.request_memo import ParsedMemo, encode_payload, splice

PAYLOAD = {"results": [{"chunk_id": "c1", "score": 0.5, "text": "é \u2028 \"q\"", "at": datetime.datetime(2024, 5, 1),
                        "scores": {"vector": np.float64(0.25)}, "metadata": {"n": [1, 2.5, None, True]}}],
           "entity_ids": ["e1"], "corrections": [], "routing": {"strategy": "hybrid", "alpha": 0.7}}
FIELDS = {"count": 1, "cache": "exact", "took_ms": 0.37, "search_id": "s_1"}


def test_the_spliced_answer_is_the_merged_dict_encoded():
    encoded = encode_payload(PAYLOAD)
    assert splice(encoded, PAYLOAD, FIELDS) == encode_json({**PAYLOAD, **FIELDS})
    timed = {**FIELDS, "timings": {"embed_ms": 3.1, "semantic_lookup_ms": 0.4}}
    assert splice(encoded, PAYLOAD, timed) == encode_json({**PAYLOAD, **timed})


def test_a_payload_holding_an_answer_field_is_encoded_whole():
    payload = {**PAYLOAD, "count": 99}   # merged, the answer's count replaces it in place
    assert splice(encode_payload(payload), payload, FIELDS) == encode_json({**payload, **FIELDS})


def test_what_orjson_refuses_is_not_spliced():
    assert encode_payload({"results": [], "big": 2**70}) is None   # encode_json falls back to json.dumps


def test_the_memo_keeps_the_most_recent_bodies_and_no_long_ones():
    memo = ParsedMemo(max_entries=2, max_body_bytes=10)
    decision = Decision("", "hybrid", 0.5)
    memo.put(b"a", "request-a", decision)
    memo.put(b"b", "request-b", decision)
    assert memo.get(b"a").request == "request-a"     # "a" used last: "b" is the oldest
    memo.put(b"c", "request-c", decision)
    assert memo.get(b"b") is None and len(memo) == 2
    assert memo.put(b"x" * 11, "long", decision) is None and memo.get(b"x" * 11) is None


def test_each_search_gets_its_own_decision():
    memo = ParsedMemo()
    entry = memo.put(b"{}", "request", Decision("", "auto", 0.5))
    first = entry.fresh_decision()
    first.features, first.strategy = {"f": 1.0}, "text"   # what the route stage does to a decision
    second = memo.get(b"{}").fresh_decision()
    assert second.features is None and second.strategy == "auto"


def test_the_local_cache_encoded_copy_is_retired_with_its_copy():
    local = LocalExactCache()
    local.put("k", (1,), PAYLOAD, time.time() + 100)
    copy = local.get_copy("k", (1,))
    assert copy.payload is PAYLOAD and copy.encoded == encode_json(PAYLOAD)
    copy.telemetry = "the row's answer columns"
    assert local.get_copy("k", (1,)).telemetry == "the row's answer columns"
    assert local.get_copy("k", (2,)) is None     # an entity changed: no copy, encoded or not, no row memo
    assert local.get_copy("k", (1,)) is None
    local.put("k", (2,), PAYLOAD, time.time() + 100)
    assert local.get_copy("k", (2,)).telemetry is None   # a new copy makes its own
