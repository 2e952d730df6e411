"""POST /search over HTTP against the real stack: documents go in through the upload API and
the ingestion worker, searches through the search worker (real model, Postgres, KV).

The corpus is designed so each behaviour has a distinguishable outcome: a document that
only full text finds, one that only the vector finds, a typo only trigram finds, the same
document id in two tenants, a group shared by one key.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from ..helpers import Client, Tenant, new_tenant, put_document, wait_document

A_DOCS = {
    "vacuum": dict(text="PostgreSQL autovacuum reclaims storage held by dead tuples. Lower "
                        "autovacuum_vacuum_scale_factor on large, busy tables so vacuum runs more often.",
                   title="Autovacuum tuning", source="wiki", tags=["postgres", "ops"]),
    "k8s": dict(text="Kubernetes schedules pods onto nodes; the kube-scheduler weighs resource requests, taints "
                     "and affinity rules before binding a pod.",
                title="Scheduling", source="notes", tags=["k8s", "ops"]),
    "bread": dict(text="To bake sourdough bread, feed the starter the night before, mix flour, water and salt, "
                       "and let the dough rise slowly in a cool kitchen.",
                  title="Sourdough", source="blog", tags=["cooking"]),
    "incident": dict(text="Incident ZX-4471-QK: the payment gateway returned HTTP 502 errors for fourteen minutes "
                          "after a certificate rotation.",
                     title="Gateway incident", source="tickets", tags=["ops", "payments"]),
    # Full text finds this one for "how to fix a car that won't start" (fix, start) ...
    "makefile": dict(text="Run make start to boot the dev containers; fix the flaky login test before merging.",
                     title="Dev loop", source="notes", tags=["dev"]),
    # ... the vector finds this one (same idea, no shared word).
    "battery": dict(text="If the engine cranks but the vehicle will not turn over, check the battery terminals "
                         "and the ignition relay.",
                    title="Engine trouble", source="blog", tags=["auto"]),
}
B_DOCS = {  # same document id as one of A's, on purpose
    "vacuum": dict(text="Robot vacuum cleaners map the living room with lidar and empty their dust bins "
                        "automatically after each run.",
                   title="Robot vacuums", source="wiki", tags=["home"]),
}
G_DOCS = {
    "handbook": dict(text="Team handbook: on-call engineers acknowledge pages within five minutes and write a "
                          "postmortem for every customer-facing outage.",
                     title="Handbook", source="wiki", tags=["ops"]),
}
RUNBOOK_SECTIONS = [
    "Section one, preparation. " + "Check that the staging cluster is healthy, that the release branch is green, "
    "and that the on-call rotation knows a deploy is coming. " * 4,
    "Section two, the database migration. " + "Apply the schema migration with the lock timeout set low, watch "
    "replication lag on the replicas, and pause if lag exceeds thirty seconds. " * 4,
    "Section three, rollout. " + "Shift traffic to the canary in five percent steps, compare error budgets "
    "against the baseline, and promote only when the dashboards stay flat. " * 4,
]


@dataclass
class Corpus:
    a: Tenant           # key for A only
    b: Tenant           # key for B only
    group: str          # group entity G
    ag: Client          # search client whose key grants A and G
    docs: dict          # (entity, document id) -> status-route document


def _upload(tenant: Tenant, docs: dict) -> None:
    for doc_id, d in docs.items():
        put_document(tenant, doc_id, d["text"], title=d["title"], source=d["source"], tags=d["tags"])


@pytest.fixture(scope="module")
async def corpus(stack, upload_admin) -> Corpus:
    a = new_tenant(stack, upload_admin, prefix="sa")
    b = new_tenant(stack, upload_admin, prefix="sb")
    group = f"sg-{uuid.uuid4().hex[:8]}"
    status, body = upload_admin.post("/admin/entities", {"id": group, "kind": "group"})
    assert status == 201, body
    status, ag_key = upload_admin.post("/admin/keys", {"name": "a+g", "entity_ids": [a.entity_id, group]})
    assert status == 201, ag_key
    g = Tenant(stack, group, ag_key["key"])
    _upload(a, A_DOCS)
    _upload(b, B_DOCS)
    _upload(g, G_DOCS)
    put_document(a, "runbook", "\n\n".join(RUNBOOK_SECTIONS), title="Release runbook", source="wiki",
                 tags=["ops", "release"])
    waits = [(a, d) for d in [*A_DOCS, "runbook"]] + [(b, d) for d in B_DOCS] + [(g, d) for d in G_DOCS]
    ready = await asyncio.gather(*(wait_document(t, d) for t, d in waits))
    docs = {}
    for (t, d), doc in zip(waits, ready):
        assert doc["status"] == "ready", doc
        docs[(t.entity_id, d)] = doc
    return Corpus(a=a, b=b, group=group, ag=g.search, docs=docs)


def search(client: Client, body: dict) -> dict:
    status, answer = client.post("/search", {"cache": False, **body})
    assert status == 200, answer
    return answer


def doc_ids(answer: dict) -> list[str]:
    return [r["document_id"] for r in answer["results"]]


# --- results --------------------------------------------------------------------------


def test_result_shape(corpus):
    answer = search(corpus.a.search, {"query": "how can I bake sourdough bread", "k": 3,
                                      "include": {"summary": True}})
    assert answer["cache"] == "none" and answer["took_ms"] > 0
    # the query embedding and the lexical statement run side by side, then the hybrid one
    # the router decides per query by default (ROUTER_DEFAULT = "auto"): its stage is timed too
    assert set(answer["timings"]) == {"embed_ms", "lexical_ms", "route_ms", "hybrid_ms"}
    assert answer["took_ms"] >= answer["timings"]["hybrid_ms"] > 0
    assert answer["entity_ids"] == [corpus.a.entity_id]
    top = answer["results"][0]
    assert top["document_id"] == "bread" and top["entity_id"] == corpus.a.entity_id
    assert "sourdough" in top["text"] and top["position"] == 0 and top["start_char"] == 0
    assert top["end_char"] == len(A_DOCS["bread"]["text"])
    assert top["document"]["title"] == "Sourdough" and top["document"]["tags"] == ["cooking"]
    assert top["document"]["source"] == "blog" and top["document"]["summary"]
    assert set(top["scores"]) == {"vector", "text", "trigram"}
    assert top["scores"]["vector"] > 0.5 and top["scores"]["text"] > 0
    scores = [r["score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    uuid.UUID(top["chunk_id"])


def test_text_can_be_left_out(corpus):
    answer = search(corpus.a.search, {"query": "sourdough", "k": 1, "include": {"text": False}})
    assert answer["results"] and "text" not in answer["results"][0]


def test_alpha_separates_full_text_from_vector(corpus):
    query = "how to fix a car that won't start"
    text_only = search(corpus.a.search, {"query": query, "alpha": 0})
    vector_only = search(corpus.a.search, {"query": query, "alpha": 1})
    blend = search(corpus.a.search, {"query": query, "alpha": 0.5, "k": 2})
    # full text: only chunks sharing a word, so the battery chunk is not even a candidate
    assert doc_ids(text_only)[0] == "makefile" and "battery" not in doc_ids(text_only)  # (so: not empty)
    assert all(r["scores"]["text"] > 0 or r["scores"]["trigram"] > 0 for r in text_only["results"])
    # vector: the same idea in other words ranks first
    assert doc_ids(vector_only)[0] == "battery"
    assert doc_ids(vector_only).index("battery") < doc_ids(vector_only).index("makefile")
    # blend: both signals count, so both documents make the top two
    assert set(doc_ids(blend)) == {"makefile", "battery"}


def test_rrf_fusion(corpus):
    answer = search(corpus.a.search, {"query": "how can I bake sourdough bread", "fusion": "rrf", "k": 3})
    assert doc_ids(answer)[0] == "bread"
    assert answer["results"][0]["score"] == pytest.approx(1.0)  # first in both lists
    assert len(answer["results"]) == 3 and all(0 < r["score"] <= 1 for r in answer["results"])


def test_typo_is_found_through_trigram(corpus):
    answer = search(corpus.a.search, {"query": "autovacum", "alpha": 0})
    top = answer["results"][0]
    assert top["document_id"] == "vacuum"
    # no chunk holds the word as typed; the tenant's closest term stands in for it
    assert answer["corrections"] == {"autovacum": ["autovacuum"]}
    assert top["scores"]["text"] == 0 and top["scores"]["trigram"] > 0


def test_identifier_query(corpus):
    answer = search(corpus.a.search, {"query": "ZX-4471-QK", "alpha": 0.3})
    assert doc_ids(answer)[0] == "incident"


def test_websearch_text_mode(corpus):
    def found(query):
        return doc_ids(search(corpus.a.search, {"query": query, "alpha": 0, "text_mode": "websearch"}))

    assert found('"dead tuples" busy') == ["vacuum"]
    assert found('"tuples dead"') == []  # a phrase keeps its order
    assert found("ops -kubernetes") == []  # no chunk says "ops"; trigram stays out of websearch
    assert set(found("pods or sourdough")) == {"k8s", "bread"}
    assert found("pods -kubernetes") == []
    # the default "any" mode: any word counts
    assert set(doc_ids(search(corpus.a.search, {"query": "pods sourdough", "alpha": 0}))) == {"k8s", "bread"}


def test_thresholds_drop_weak_matches(corpus):
    loose = search(corpus.a.search, {"query": "how can I bake sourdough bread", "alpha": 1})
    strict = search(corpus.a.search, {"query": "how can I bake sourdough bread", "alpha": 1,
                                      "vector_threshold": 0.5})
    assert len(loose["results"]) > 1
    assert doc_ids(strict) == ["bread"] and strict["results"][0]["scores"]["vector"] >= 0.5


def test_dedupe_and_neighbours(corpus):
    query = "release deploy migration replication lag canary rollout staging cluster"
    plain = search(corpus.a.search, {"query": query, "k": 5, "filters": {"document_ids": ["runbook"]}})
    assert len(plain["results"]) >= 2, "the runbook should have several chunks"
    deduped = search(corpus.a.search, {"query": query, "k": 5, "dedupe": True})
    assert doc_ids(deduped).count("runbook") == 1
    assert len(set(doc_ids(deduped))) == len(doc_ids(deduped))

    answer = search(corpus.a.search, {"query": "replication lag on the replicas", "k": 1,
                                      "filters": {"document_ids": ["runbook"]}, "include": {"neighbours": 1}})
    hit = answer["results"][0]
    positions = [n["position"] for n in hit["neighbours"]]
    assert positions and all(abs(p - hit["position"]) == 1 for p in positions)
    assert all(n["text"] for n in hit["neighbours"])


# --- filters ------------------------------------------------------------------------------

BROAD = "operations database cluster engine bread incident pods"


def _all(corpus, body: dict) -> set[str]:
    return set(doc_ids(search(corpus.a.search, {"query": BROAD, "k": 50, "alpha": 0.5, **body})))


def test_filter_document_ids(corpus):
    assert _all(corpus, {"filters": {"document_ids": ["bread", "k8s"]}}) == {"bread", "k8s"}


def test_filter_sources(corpus):
    assert _all(corpus, {"filters": {"sources": ["notes"]}}) == {"k8s", "makefile"}


def test_filter_tags_any_of(corpus):
    assert _all(corpus, {"filters": {"tags": ["cooking", "auto"]}}) == {"bread", "battery"}


def test_filter_exclusions(corpus):
    everything = _all(corpus, {})
    assert {"bread", "vacuum"} <= everything
    assert _all(corpus, {"filters": {"exclude_document_ids": ["bread", "vacuum"]}}) == everything - {"bread", "vacuum"}
    bread_chunk = search(corpus.a.search, {"query": "sourdough", "k": 1})["results"][0]["chunk_id"]
    answer = search(corpus.a.search, {"query": "sourdough", "k": 50, "filters": {"exclude_chunk_ids": [bread_chunk]}})
    assert bread_chunk not in [r["chunk_id"] for r in answer["results"]]


@pytest.mark.parametrize("column", ["created_at", "updated_at"])
def test_filter_time_ranges(corpus, column):
    mine = {d: doc for (e, d), doc in corpus.docs.items() if e == corpus.a.entity_id}
    # documents that became ready in one grouped commit share their updated_at: pivot on the
    # distinct values (there may be only one)
    values = sorted({mine[d][column] for d in mine})
    pivot = values[len(values) // 2]
    prefix = column.split("_")[0]
    after = _all(corpus, {"filters": {f"{prefix}_after": pivot}})
    before = _all(corpus, {"filters": {f"{prefix}_before": pivot}})
    assert after == {d for d in mine if mine[d][column] >= pivot}
    assert before == {d for d in mine if mine[d][column] < pivot}
    assert after and not (after & before) and after | before == set(mine)
    # each bound filters: nothing is after the last time, nothing before the first
    last = datetime.fromisoformat(values[-1]) + timedelta(seconds=1)
    assert _all(corpus, {"filters": {f"{prefix}_after": last.isoformat()}}) == set()
    assert _all(corpus, {"filters": {f"{prefix}_before": values[0]}}) == set()


def test_filters_combine(corpus):
    assert _all(corpus, {"filters": {"tags": ["ops"], "sources": ["wiki", "tickets"],
                                     "exclude_document_ids": ["incident"]}}) == {"vacuum", "runbook"}


# --- tenancy ---------------------------------------------------------------------------------


def test_tenant_isolation(corpus):
    a, b = corpus.a, corpus.b
    # the same words, the same document id in both tenants: each key sees only its own
    for client, entity in ((a.search, a.entity_id), (b.search, b.entity_id)):
        answer = search(client, {"query": "vacuum", "k": 50, "alpha": 0.5, "filters": {"document_ids": ["vacuum"]}})
        assert answer["results"] and {r["entity_id"] for r in answer["results"]} == {entity}
    texts = [r["text"] for r in search(b.search, {"query": "autovacuum dead tuples postgres", "k": 50})["results"]]
    assert texts and not any("PostgreSQL" in t for t in texts)


@pytest.mark.parametrize("filters", [
    {"sources": ["wiki' OR '1'='1"]},
    {"tags": ["ops'); DROP TABLE chunks; --"]},
    {"sources": ["wiki"], "tags": ["ops", "x\" OR entity_id IS NOT NULL --"]},
    {"exclude_document_ids": ["bread"]},
])
def test_crafted_filters_never_cross_tenants(corpus, filters):
    answer = search(corpus.b.search, {"query": "autovacuum postgres bread kubernetes", "k": 50, "filters": filters})
    assert {r["entity_id"] for r in answer["results"]} <= {corpus.b.entity_id}


def test_other_entities_are_forbidden_not_empty(corpus):
    for body in ({"entity_ids": [corpus.a.entity_id]},
                 {"entity_ids": [corpus.b.entity_id, corpus.a.entity_id]},
                 {"entity_ids": [corpus.group]}):
        status, answer = corpus.b.search.post("/search", {"query": "vacuum", **body})
        assert status == 403, answer
        assert answer["field"] == "entity_ids" and "not granted" in answer["message"]
    status, answer = corpus.a.search.post("/search", {"query": "vacuum", "entity_ids": [corpus.group]})
    assert status == 403, answer


def test_crafted_ids_are_taken_literally_and_reach_nothing(corpus):
    # Document ids may be anything a corpus uses, so these are valid ids: matched literally (the SQL
    # is parameterised), they name no document of b's, and never one of a's.
    for filters in ({"document_ids": ["x' OR 1=1 --"]}, {"document_ids": [f"{corpus.a.entity_id}/vacuum"]},
                    {"document_ids": ["vacuum' --", "%"]}):
        status, answer = corpus.b.search.post("/search", {"query": "vacuum", "filters": filters, "cache": False})
        assert (status, answer["results"]) == (200, []), answer
    status, answer = corpus.b.search.post("/search", {"query": "vacuum",
                                                      "filters": {"exclude_chunk_ids": ["1; DROP TABLE chunks"]}})
    assert (status, answer["field"]) == (400, "filters.exclude_chunk_ids.0"), answer


def test_multi_entity_search(corpus):
    query = "on-call engineers write a postmortem after an outage"
    both = search(corpus.ag, {"query": query, "k": 10})
    assert both["entity_ids"] == sorted([corpus.a.entity_id, corpus.group])
    assert doc_ids(both)[0] == "handbook" and both["results"][0]["entity_id"] == corpus.group
    assert {r["entity_id"] for r in both["results"]} == {corpus.a.entity_id, corpus.group}
    only_a = search(corpus.ag, {"query": query, "k": 10, "entity_ids": [corpus.a.entity_id]})
    assert only_a["results"] and {r["entity_id"] for r in only_a["results"]} == {corpus.a.entity_id}
    only_g = search(corpus.ag, {"query": query, "entity_ids": [corpus.group]})
    assert {r["entity_id"] for r in only_g["results"]} == {corpus.group}


# --- bad requests -------------------------------------------------------------------------------


@pytest.mark.parametrize("body,field", [
    ({"query": "x", "colour": "red"}, "colour"),
    ({"k": 5}, "query"),
    ({"query": "   "}, "query"),
    ({"query": "x" * 2001}, "query"),
    ({"query": "x", "k": 0}, "k"),
    ({"query": "x", "k": 101}, "k"),
    ({"query": "x", "k": "5"}, "k"),
    ({"query": "x", "k": 2.5}, "k"),
    ({"query": "x", "alpha": 1.5}, "alpha"),
    ({"query": "x", "alpha": "high"}, "alpha"),
    ({"query": "x", "fusion": "max"}, "fusion"),
    ({"query": "x", "vector_threshold": -0.1}, "vector_threshold"),
    ({"query": "x", "dedupe": "yes"}, "dedupe"),
    ({"query": "x", "entity_ids": []}, "entity_ids"),
    ({"query": "x", "entity_ids": ["bad id!"]}, "entity_ids.0"),
    ({"query": "x", "filters": {"created_after": "yesterday"}}, "filters.created_after"),
    ({"query": "x", "filters": {"updated_before": "2026-13-45T00:00:00Z"}}, "filters.updated_before"),
    ({"query": "x", "filters": {"created_after": "2026-02-01T00:00:00Z", "created_before": "2026-01-01T00:00:00Z"}},
     "filters"),
    ({"query": "x", "filters": {"exclude_chunk_ids": ["not-a-uuid"]}}, "filters.exclude_chunk_ids.0"),
    ({"query": "x", "filters": {"tags": ["a\u0000b"]}}, "filters.tags.0"),
    ({"query": "x", "filters": {"colour": ["red"]}}, "filters.colour"),
    ({"query": "x", "include": {"neighbours": 9}}, "include.neighbours"),
    ({"query": "x", "rerank": True}, "rerank"),
])
def test_bad_requests_name_the_field(corpus, body, field):
    status, answer = corpus.a.search.post("/search", body)
    assert status == 400, answer
    assert answer["error"] == "invalid_request" and answer["field"] == field, answer
    assert answer["message"]


def test_body_must_be_a_json_object(corpus):
    status, answer = corpus.a.search.post("/search", raw=b"{not json", headers={"Content-Type": "application/json"})
    assert status == 400 and answer["field"] == "body"
    status, answer = corpus.a.search.post("/search", ["query"])
    assert status == 400 and answer["field"] == "body"


def test_authentication_is_required(stack, corpus):
    status, answer = Client(stack.url("search")).post("/search", {"query": "x"})
    assert status == 401
    status, answer = Client(stack.url("search"), "ei_not_a_key").post("/search", {"query": "x"})
    assert status == 401


# --- rerank (restarts the search worker with a reranker, then without) ----------------------


async def test_rerank_over_http(stack, corpus):
    from aiohttp import web

    received: list[dict] = []

    async def rerank(request):  # TEI-compatible: prefers whatever mentions Kubernetes
        body = await request.json()
        received.append(body)
        return web.json_response([{"index": i, "score": 10.0 if "Kubernetes" in t else 1.0 / (1 + i)}
                                  for i, t in enumerate(body["texts"])])

    app = web.Application()
    app.router.add_post("/rerank", rerank)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/rerank"

    async def restart(extra_env):
        stack.stop_worker("search")
        stack.start_worker("search", extra_env=extra_env)
        await asyncio.to_thread(stack.wait_healthy, "search")

    await restart({"EDGEINDEX_RERANK_URL": url})
    try:
        body = {"query": "how can I bake sourdough bread", "k": 2, "cache": False}
        status, plain = await asyncio.to_thread(corpus.a.search.post, "/search", body)
        assert status == 200 and doc_ids(plain)[0] == "bread"
        status, reranked = await asyncio.to_thread(corpus.a.search.post, "/search",
                                                   {**body, "rerank": True, "include": {"text": False}})
        assert status == 200, reranked
        assert doc_ids(reranked)[0] == "k8s" and len(reranked["results"]) == 2
        top = reranked["results"][0]
        assert top["score"] == 10.0 and top["scores"]["rerank"] == 10.0 and 0 <= top["scores"]["fused"] <= 1
        assert "text" not in top
        assert received[-1]["query"] == "how can i bake sourdough bread"
        assert len(received[-1]["texts"]) > 2  # more candidates than k go to the reranker
    finally:
        await restart({})
        await runner.cleanup()
    status, answer = await asyncio.to_thread(corpus.a.search.post, "/search", {"query": "x", "rerank": True})
    assert status == 400 and answer["field"] == "rerank"
