"""The adaptive retrieval router on the real stack: strategies, the choice following the features,
feedback within bounds and rollback, shadow mode, telemetry (shared/routing/)."""

from __future__ import annotations

import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.kv import DiskKV
from edgeindex.bindings.vectorize import PgVectorIndex
from edgeindex.routing import store
from edgeindex.routing.model import Bounds, RouterModel
from edgeindex.routing.service import Router, RouterSettings
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import Principal

from ..helpers import Tenant, new_tenant, put_document, wait_document, wait_for

DOCS = {
    "cold-start": "When the weather turns freezing, engines struggle to start: the battery loses charge and "
                  "the oil thickens, so the starter motor cannot turn the crankshaft fast enough.",
    "error-codes": "Controller fault kx-99 appears together with err_4711 when the coolant sensor reports a "
                   "timeout; replace the sensor harness and clear the code.",
    "tyres": "Winter tyres keep their grip below seven degrees because their rubber compound stays soft.",
}
IDENTIFIERS = "err_4711 kx-99 timeout"
PARAPHRASE = "why does my car refuse to start on a very cold morning?"


def override() -> RouterModel:
    """Keyword for identifier-heavy queries, vector for questions, the fixed blend otherwise."""
    model = RouterModel.blank()
    names = [n for n, _ in model.bins]
    column = {f: 1 + i for i, f in enumerate(model.features)}
    model.weights[names.index("text"), column["identifier_share"]] = 3.0
    model.weights[names.index("text"), column["digit_share"]] = 2.0
    model.weights[names.index("vector"), column["question"]] = 2.0
    model.meta = {"source": "test override"}
    return model


async def corpus(stack, upload_admin, prefix: str):
    t = new_tenant(stack, upload_admin, prefix=prefix)
    for d, text in DOCS.items():
        put_document(t, d, text)
    for d in DOCS:
        assert (await wait_document(t, d))["status"] == "ready"
    return t


def search(t, body: dict) -> dict:
    status, answer = t.search.post("/search", {"entity_ids": [t.entity_id], "cache": False, **body})
    assert status == 200, answer
    return answer


async def telemetry(db, search_id: str) -> dict:
    """The search's telemetry row (written off the request path: polled, bounded)."""
    async def row():
        return await db.fetchone("SELECT * FROM search_telemetry WHERE search_id = %s", (search_id,))
    return await wait_for(row, timeout=30)


async def test_fixed_strategies_set_alpha_and_alpha_belongs_to_hybrid(stack, upload_admin):
    t = await corpus(stack, upload_admin, "rs")
    text = search(t, {"query": IDENTIFIERS, "strategy": "text"})
    assert text["routing"]["strategy"] == "text" and text["routing"]["alpha"] == 0.0
    assert all(r["scores"]["text"] > 0 for r in text["results"])  # only lexical matches come back
    vector = search(t, {"query": IDENTIFIERS, "strategy": "vector"})
    assert vector["routing"]["alpha"] == 1.0 and len(vector["results"]) == 3
    # no strategy: the deployment's default (ROUTER_DEFAULT = "auto"): routed exactly as an auto request
    default = search(t, {"query": IDENTIFIERS})
    auto = search(t, {"query": IDENTIFIERS, "strategy": "auto"})
    assert default["routing"]["requested"] is None and default["routing"]["bin"] == auto["routing"]["bin"]
    assert (default["routing"]["strategy"], default["routing"]["alpha"]) == (auto["routing"]["strategy"],
                                                                            auto["routing"]["alpha"])
    # an alpha without a strategy is still the fixed blend
    blend = search(t, {"query": IDENTIFIERS, "alpha": 0.8})
    assert (blend["routing"]["strategy"], blend["routing"]["alpha"]) == ("hybrid", 0.8)
    assert "bin" not in blend["routing"]
    status, answer = t.search.post("/search", {"query": "x", "entity_ids": [t.entity_id], "strategy": "text",
                                               "alpha": 0.3})
    assert status == 400 and answer["field"] == "alpha", answer
    status, answer = t.search.post("/search", {"query": "x", "entity_ids": [t.entity_id], "strategy": "best"})
    assert status == 400 and answer["field"] == "strategy", answer


async def test_auto_choice_follows_the_features(stack, upload_admin, db):
    t = await corpus(stack, upload_admin, "ra")
    version = await store.add(db, override(), source="train", scope=t.entity_id, note="test override")

    async def served(query):
        answer = search(t, {"query": query, "strategy": "auto"})
        return answer if answer["routing"]["model_version"] == version else None  # within the model refresh

    keyword = await wait_for(lambda: served(IDENTIFIERS), timeout=30)
    assert keyword["routing"]["strategy"] == "text", keyword["routing"]
    assert keyword["routing"]["features"]["identifier_share"] > 0.5
    assert keyword["routing"]["features"]["matched_share"] > 0  # first-pass evidence reached the router
    assert keyword["results"][0]["document_id"] == "error-codes"
    assert "route_ms" in keyword["timings"]  # the router ran between the first pass and retrieval

    paraphrase = await served(PARAPHRASE)
    assert paraphrase["routing"]["strategy"] == "vector", paraphrase["routing"]
    assert paraphrase["routing"]["features"]["question"] == 1.0
    assert paraphrase["results"][0]["document_id"] == "cold-start"
    # served exactly as the strategy it chose
    fixed = search(t, {"query": PARAPHRASE, "strategy": "vector"})
    assert [r["chunk_id"] for r in paraphrase["results"]] == [r["chunk_id"] for r in fixed["results"]]

    # the decision is part of the cache key: a cached auto answer carries the decision it was made with
    for _ in range(2):
        status, cached = t.search.post("/search", {"query": IDENTIFIERS, "strategy": "auto",
                                                   "entity_ids": [t.entity_id]})
        assert status == 200
    assert cached["cache"] == "exact" and cached["routing"]["strategy"] == "text"


async def test_telemetry_rows_carry_what_a_search_returned(stack, upload_admin, db):
    t = await corpus(stack, upload_admin, "rt")
    answer = search(t, {"query": PARAPHRASE, "strategy": "auto", "k": 2})
    row = await telemetry(db, answer["search_id"])
    assert [r["chunk_id"] for r in row["results"]] == [r["chunk_id"] for r in answer["results"]]
    assert [r["document_id"] for r in row["results"]] == [r["document_id"] for r in answer["results"]]
    assert row["results"][0]["scores"] == answer["results"][0]["scores"]
    assert row["entity_ids"] == [t.entity_id] and row["query"] == PARAPHRASE.casefold()
    assert row["strategy"] == answer["routing"]["strategy"] and row["alpha"] == answer["routing"]["alpha"]
    assert row["features"] == answer["routing"]["features"]
    assert row["requested"] == "auto" and row["cache"] == "none"
    assert row["timings"]["route_ms"] == answer["timings"]["route_ms"]
    assert row["model_version"] == answer["routing"]["model_version"] is not None
    # a cached answer is logged too, with its cache outcome
    body = {"query": "winter tyres grip", "entity_ids": [t.entity_id]}
    t.search.post("/search", body)
    status, hit = t.search.post("/search", body)
    assert hit["cache"] == "exact"
    row = await telemetry(db, hit["search_id"])
    assert row["cache"] == "exact" and [r["chunk_id"] for r in row["results"]] == [r["chunk_id"] for r in hit["results"]]


async def test_feedback_moves_weights_within_bounds_and_rollback_restores(stack, upload_admin, db):
    t = await corpus(stack, upload_admin, "rf")
    bounds = Bounds()  # the stack's ROUTER_* vars are the defaults
    before = await store.active(db, store.DEPLOYMENT)
    # a query the two sides rank differently: full text puts the identifiers' document first
    answers = [search(t, {"query": "err_4711 why does my car not start when it is cold", "strategy": "auto"})
               for _ in range(bounds.min_evidence)]
    for answer in answers:
        await telemetry(db, answer["search_id"])
    by_text = max(answers[0]["results"], key=lambda r: r["scores"]["text"])["chunk_id"]
    by_vector = max(answers[0]["results"], key=lambda r: r["scores"]["vector"])["chunk_id"]
    assert by_text != by_vector, answers[0]["results"]
    useful = [by_text] * len(answers)

    # someone else's key cannot judge these searches
    other = new_tenant(stack, upload_admin, prefix="rx")
    status, body = other.search.post("/feedback", {"search_id": answers[0]["search_id"], "useful": [useful[0]]})
    assert status == 404, body
    status, body = t.search.post("/feedback", {"search_id": answers[0]["search_id"],
                                               "useful": ["00000000-0000-0000-0000-000000000000"]})
    assert status == 400 and body["field"] == "useful", body

    applied = []
    for i, answer in enumerate(answers):
        status, body = t.search.post("/feedback", {"search_id": answer["search_id"], "useful": [useful[i]],
                                                   "not_useful": [by_vector]})
        assert status == 200, body
        assert body["rewards"]["text"] > body["rewards"]["vector"], body  # text ranked the useful chunk first
        applied.append(body["applied_in_version"])
    # minimum evidence: nothing moves before the last event
    assert applied[:-1] == [None] * (bounds.min_evidence - 1) and applied[-1] is not None
    moved = await store.active(db, t.entity_id)
    assert moved.version == applied[-1] and moved.base == before.version
    delta = moved.model.weights - before.model.weights
    assert np.abs(delta).max() > 0
    assert np.abs(delta).max() <= bounds.max_step + 1e-9  # the learning-rate cap
    # the floor: the fixed blend stays reachable on the typical query
    assert moved.model.blend_gap() <= max(before.model.blend_gap(), 0) + bounds.floor_margin + 1e-9
    # the deployment's model is untouched: the entity got an override
    assert (await store.active(db, store.DEPLOYMENT)).version == before.version

    restored = await store.rollback(db, scope=t.entity_id)
    active = await store.active(db, t.entity_id)
    assert active.version == restored and np.allclose(active.model.weights, before.model.weights)
    rows = await db.fetch("SELECT source, parent FROM router_models WHERE scope = %s ORDER BY version",
                          (t.entity_id,))
    assert [r["source"] for r in rows] == ["feedback", "rollback"]


async def test_shadow_mode_serves_the_default_and_logs_both(stack, upload_admin, db, tmp_path):
    t = await corpus(stack, upload_admin, "rw")
    await store.add(db, override(), source="train", scope=t.entity_id, note="test override")
    embedder = local_embedder()
    router = Router(db, RouterSettings(shadow=True))
    service = SearchService(db=db, kv=DiskKV(tmp_path / "kv", namespace="cache"), embedder=embedder,
                            semantic_cache=PgVectorIndex(db, "query-cache", model_id=embedder.model_id,
                                                         dimension=embedder.dimension),
                            settings=SearchSettings(max_k=100, max_query_chars=2000, semantic_threshold=0.95,
                                                    cache_ttl=60), router=router)
    service.prepare()

    class Background:
        def __init__(self):
            self.tasks = []

        def wait_until(self, coro):
            self.tasks.append(coro)

    principal = Principal(key_id="test", entity_ids=frozenset({t.entity_id}), is_admin=False)
    background = Background()
    answer = await service.search(principal, {"query": IDENTIFIERS, "cache": False}, background=background)
    for task in background.tasks:
        await task
    # served: the fixed blend; logged beside it: the router's choice (text, by the override)
    assert answer["routing"]["strategy"] == "hybrid" and answer["routing"]["alpha"] == 0.8
    assert answer["routing"]["shadow"]["strategy"] == "text", answer["routing"]
    fixed = search(t, {"query": IDENTIFIERS, "strategy": "hybrid"})
    assert [r["chunk_id"] for r in answer["results"]] == [r["chunk_id"] for r in fixed["results"]]
    row = await telemetry(db, answer["search_id"])
    assert (row["strategy"], row["alpha"]) == ("hybrid", 0.8)
    assert (row["shadow_strategy"], row["shadow_alpha"]) == ("text", 0.0)
    assert row["features"]["identifier_share"] > 0.5


GERMAN = {
    "rhein": "Der Rhein entspringt in den Schweizer Alpen, fließt durch den Bodensee und mündet in den "
             "Niederlanden in die Nordsee. Er ist einer der wichtigsten Schifffahrtswege Europas.",
    "donau": "Die Donau entspringt im Schwarzwald und fließt nach Osten durch zehn Länder, bevor sie in "
             "Rumänien in das Schwarze Meer mündet.",
}
GERMAN_QUERY = "Wo mündet der Rhein in die Nordsee?"


async def test_auto_sees_a_language_the_embedding_model_does_not_know(stack, upload_admin):
    """all-MiniLM-L6-v2 declares English: a German query over German chunks says so in its features
    (query language, the best BM25 chunks' stored language), an English one does not; the query
    vector's cosine to those chunks (the lexical statement's probe) is measured for both."""
    t = await corpus(stack, upload_admin, "rl")
    for d, text in GERMAN.items():
        put_document(t, d, text)
    for d in GERMAN:
        assert (await wait_document(t, d))["status"] == "ready"

    german = search(t, {"query": GERMAN_QUERY, "strategy": "auto"})
    f = german["routing"]["features"]
    assert f["query_language_unknown"] > 0.5, f
    assert f["scope_language_unknown"] > 0.5, f          # the probe's chunks are stored as German
    assert f["probe_cosine"] > 0 and f["probe_spread"] >= 0, f
    assert german["results"][0]["document_id"] == "rhein"

    english = search(t, {"query": PARAPHRASE, "strategy": "auto"})
    e = english["routing"]["features"]
    assert e["query_language_unknown"] == 0 and e["scope_language_unknown"] == 0, e
    assert e["probe_cosine"] > 0.3, e                     # the model knows English: the cold-start chunk is close

    # the shipped model (trained on German, Chinese and English sets) leans on full text for the
    # language the model does not know, and keeps the fixed blend for English
    assert german["routing"]["model_version"] is not None
    assert german["routing"]["alpha"] < 0.5 < english["routing"]["alpha"], (german["routing"], english["routing"])

    # a fixed strategy asks for no probe, and reports no features
    fixed = search(t, {"query": GERMAN_QUERY, "strategy": "hybrid"})
    assert "features" not in fixed["routing"]


def second_key(stack, upload_admin, entity_ids: list[str]) -> Tenant:
    """Another API key, granted ``entity_ids``; its client works on the first of them."""
    status, body = upload_admin.post("/admin/keys", {"name": f"second key for {entity_ids}", "entity_ids": entity_ids})
    assert status == 201, body
    return Tenant(stack, entity_ids[0], body["key"])


async def test_feedback_belongs_to_the_searching_key_counts_once_and_leaves_the_deployment(stack, upload_admin, db):
    t = await corpus(stack, upload_admin, "ro")
    bounds = Bounds()
    before = await store.active(db, store.DEPLOYMENT)
    empty = new_tenant(stack, upload_admin, prefix="re")
    both = second_key(stack, upload_admin, [t.entity_id, empty.entity_id])
    # a search of two entities: its feedback would be the deployment model's to learn from
    answers = []
    for _ in range(bounds.min_evidence):
        status, answer = both.search.post("/search", {"entity_ids": [t.entity_id, empty.entity_id], "cache": False,
                                                      "query": "err_4711 why does my car not start when it is cold",
                                                      "strategy": "auto"})
        assert status == 200, answer
        answers.append(answer)
    for answer in answers:
        await telemetry(db, answer["search_id"])
    chunk = answers[0]["results"][0]["chunk_id"]

    # a key granted the same entities did not run these searches: 404, as for an unknown search
    same_grant = second_key(stack, upload_admin, [t.entity_id, empty.entity_id])
    status, body = same_grant.search.post("/feedback", {"search_id": answers[0]["search_id"], "useful": [chunk]})
    assert status == 404 and body["field"] == "search_id", body

    applied = []
    for answer in answers:
        status, body = both.search.post("/feedback", {"search_id": answer["search_id"],
                                                      "useful": [answer["results"][0]["chunk_id"]]})
        assert status == 200, body
        applied.append(body["applied_in_version"])
    # a tenant's feedback is recorded and steps nothing: the deployment's version is the one before
    assert applied == [None] * bounds.min_evidence
    assert (await store.active(db, store.DEPLOYMENT)).version == before.version
    rows = await db.fetch("SELECT steps_model FROM router_feedback WHERE search_id = ANY(%s::uuid[])",
                          ([a["search_id"] for a in answers],))
    assert [r["steps_model"] for r in rows] == [False] * bounds.min_evidence

    # a search is judged once: the second report is refused and the first one stays as it was
    status, body = both.search.post("/feedback", {"search_id": answers[0]["search_id"], "useful": [],
                                                  "not_useful": [chunk]})
    assert status == 409 and body["field"] == "search_id", body
    rows = await db.fetch("SELECT useful, not_useful FROM router_feedback WHERE search_id = %s",
                          (answers[0]["search_id"],))
    assert [(r["useful"], r["not_useful"]) for r in rows] == [([chunk], [])]
