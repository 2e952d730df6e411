"""A cached answer's telemetry row (routing/service.py ``record_answer``): the columns its answer fixes
are made once per in-memory copy, and the row is the one ``record`` makes from the decision the answer
was made with; each search keeps its own id, query, requested strategy, cache outcome and timings."""

from __future__ import annotations

import time
import uuid

import orjson
from edgeindex.routing.service import Decision, Router, RouterSettings, answer_columns, new_search_id
from edgeindex.search.local_exact_cache import LocalExactCache

ANSWER = {"results": [{"chunk_id": "c1", "document_id": "d1", "entity_id": "e1", "score": 0.75, "position": 0,
                       "text": "tab\there", "scores": {"vector": 0.5, "text": 0.25}},
                      {"chunk_id": "c2", "document_id": "d2", "entity_id": "e1", "score": 0.5, "position": 3,
                       "scores": {"vector": 0.4, "text": 0.1}}],
          "entity_ids": ["e1"], "corrections": {},
          "routing": {"requested": None, "strategy": "hybrid", "alpha": 0.3, "model_version": 7, "bin": "b3",
                      "features": {"length": 4.0, "digits": 0.0}}}


class Rows:
    """The writer's queue, without Postgres."""

    window = 0.2

    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def enqueue(self, row: tuple) -> None:
        self.rows.append(row)


def _router() -> Router:
    router = Router(None, RouterSettings())  # type: ignore[arg-type]
    router.telemetry_rows = Rows()  # type: ignore[assignment]
    return router


def test_a_cached_answers_row_is_the_row_of_the_decision_it_was_made_with():
    routing = ANSWER["routing"]
    for requested, cache in (("", "exact"), ("hybrid", "semantic")):
        router = _router()
        common = dict(key_id="k1", entity_ids=["e1"], scope_hash="h", query="how to \\ bake\nbread", cache=cache,
                      timings={"took_ms": 0.4})
        router.record("s1", decision=Decision(requested, routing["strategy"], routing["alpha"], routing["features"],
                                              routing["model_version"], routing["bin"]),
                      results=ANSWER["results"], **common)
        router.record_answer("s1", requested=requested, answer=answer_columns(ANSWER), **common)
        by_decision, by_answer = router.telemetry_rows.rows
        assert by_answer == by_decision
        assert by_answer[5] == requested and by_answer[12] == cache and by_answer[4] is not None
        assert orjson.loads(by_answer[11]) == [
            {k: r[k] for k in ("chunk_id", "document_id", "entity_id", "score", "scores")} for r in ANSWER["results"]]


def test_every_hit_of_one_copy_shares_its_columns_and_keeps_its_own_fields():
    local = LocalExactCache()
    local.put("k", (1,), ANSWER, time.time() + 100)
    router = _router()
    for i in range(3):
        copy = local.get_copy("k", (1,))
        if copy.telemetry is None:   # what SearchService.telemetry does on a hit
            copy.telemetry = answer_columns(copy.payload)
        router.record_answer(f"s{i}", key_id="k1", entity_ids=["e1"], scope_hash="h", query="q", requested="",
                             answer=copy.telemetry, cache="exact", timings={"took_ms": i})
    rows = router.telemetry_rows.rows
    assert [r[0] for r in rows] == ["s0", "s1", "s2"]
    assert [orjson.loads(r[13]) for r in rows] == [{"took_ms": i} for i in range(3)]
    assert rows[0][11] is rows[1][11] is rows[2][11]   # one results JSON, encoded once for the copy


def test_search_ids_are_random_version_4_uuids():
    ids = [new_search_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text
    # every variant nibble (8, 9, a, b) and random hex elsewhere
    assert {text[19] for text in ids} == set("89ab")
    assert len({text[0] for text in ids}) == 16
