"""The choice loop of a tool select reads only the head of the ranking (tools._candidates).

Walking the whole ranking of a large registry in Python cost ~0.1-0.4 ms a request; the
candidates are now cut in numpy. The answers must be exactly those of the full walk.
"""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.selection import tools as tl

from .test_select_overlap import DB, Embedder, tool_request

QUERIES = [
    "what is the weather in Paris",
    "Send an email to Bob. Then find flights from Paris to Rome tomorrow morning. Also resize my picture.",
    "translate_text this into French and compute_bmi for 80 kg",
    "hello there",
    "stock price of ACME; resize image to 200 by 300; weather forecast for Oslo",
    # one word only one tool holds: confident on the text scores alone
    "a zeppelin ride for two",
    "my harpsichord sounds wrong",
    # a request that names a tool is confident whatever the scores: the choice loop runs (the others may
    # fall back to a shortlist with these stand-in vectors)
    "run tool_3_image on my holiday photos",
    "tool_7_ticket for the broken printer. Then tool_20_refund the order I returned on Friday. Then email the results.",
    "tool_13_email the weather forecast and tool_45_order",
]
MANY_TOOLS = [{"name": f"tool_{i}_{word}", "description": f"Does {word} things for case {i}."}
              for i, word in enumerate(["weather", "email", "flight", "image", "stock", "translate", "bmi", "ticket",
                                        "refund", "order", "calendar", "invoice"] * 5)] + [
    {"name": "book_zeppelin", "description": "Book a zeppelin ride over the lake."},
    {"name": "tune_harpsichord", "description": "Tune a harpsichord to a temperament."},
]


def test_candidates_are_the_head_of_the_ranking_not_under_the_threshold():
    fused = np.array([3.0, 0.5, 2.0, np.nan, 1.0, 4.0], np.float32)
    order = np.argsort(-fused, kind="stable")
    assert tl._candidates(order, fused, 1.0, 10) == [5, 0, 2, 4, 3]   # NaN is not "under": kept, as the walk did
    assert tl._candidates(order, fused, 1.0, 2) == [5, 0]
    assert tl._candidates(order, fused, 9.0, 10) == [3]


@pytest.mark.parametrize("k", [1, 3, 5, 10])
async def test_select_answers_as_the_walk_over_the_whole_ranking(monkeypatch, k):
    def whole(order, fused, threshold, most):
        return [int(i) for i in order]

    real = tl._candidates   # taken once: the loop below patches the module
    confident = 0
    for query in QUERIES:
        answers = []
        for candidates in (real, whole):
            monkeypatch.setattr(tl, "_candidates", candidates)
            tl._cache.clear()
            emb = Embedder()
            request = tl.SelectRequest(query, None, k, 0.0, False, True, True)   # a low cut: many candidates
            answer = await tl.select(DB(emb, tools=MANY_TOOLS, wait_for_embedding=False), emb, ["e"], request)
            answers.append({key: v for key, v in answer.items() if key not in ("took_ms", "timings", "catalogue")})
        assert answers[0] == answers[1]
        assert answers[0]["count"] >= min(k, 1)
        confident += answers[0]["confident"]
        if answers[0]["confident"]:
            assert answers[0]["fallback"] is None and answers[0]["count"] >= k   # the loop filled its places
    assert confident >= 4   # the loop was exercised, not only the fallbacks


async def test_select_with_the_default_threshold_answers_as_the_walk(monkeypatch):
    real = tl._candidates
    for query in QUERIES:
        answers = []
        for candidates in (real, lambda order, fused, threshold, most: [int(i) for i in order]):
            monkeypatch.setattr(tl, "_candidates", candidates)
            tl._cache.clear()
            emb = Embedder()
            answer = await tl.select(DB(emb, tools=MANY_TOOLS, wait_for_embedding=False), emb, ["e"],
                                     tool_request(query))
            answers.append({key: v for key, v in answer.items() if key not in ("took_ms", "timings", "catalogue")})
        assert answers[0] == answers[1]
