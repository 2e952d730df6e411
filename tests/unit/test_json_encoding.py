"""Responses are encoded by orjson (runtime/http.encode_json) into what json.dumps(default=str)
gave before: the same values for every type an answer holds, so no client sees a change."""

from __future__ import annotations

import datetime
import json
import uuid
from dataclasses import dataclass

import numpy as np
from edgeindex.json_codec import encode_default, encode_json
from edgeindex.runtime.http import json_response


@dataclass
class Point:
    x: int


def test_same_values_as_json_dumps():
    body = {
        "results": [{"chunk_id": uuid.UUID("6dcbd039-b441-42c2-be61-eec498e6e216"), "score": 0.812345,
                     "scores": {"vector": np.float64(0.5), "text": np.float32(0.25)}, "position": np.int64(3),
                     "text": "Übergröße 東京 \u2028 \"quoted\"", "tags": ["a", "b"], "summary": None}],
        "created_at": datetime.datetime(2026, 1, 1, 12, 30, tzinfo=datetime.UTC),
        "day": datetime.date(2026, 1, 2), "point": Point(1), "ok": True,
    }
    answer = json.loads(encode_json(body))
    assert answer == json.loads(json.dumps(body, default=encode_default))
    assert (answer["created_at"], answer["day"]) == ("2026-01-01T12:30:00+00:00", "2026-01-02")


def test_what_orjson_refuses_falls_back_to_json():
    for body in ({"counts": {1: 2}}, {"big": 2 ** 70}):
        assert json.loads(encode_json(body)) == json.loads(json.dumps(body, default=str))


def test_response_is_utf8_json():
    response = json_response({"query": "東京"}, status=201)
    assert response.status == 201
    assert response.content_type == "application/json" and response.charset == "utf-8"
    assert json.loads(response.body) == {"query": "東京"}
