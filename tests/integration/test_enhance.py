"""Query enhancement (shared/search/enhance/): pseudo-relevance feedback over the tenant's own chunks,
through the search worker; LLM synonyms and HyDE against a small OpenAI-compatible server this
test starts, through a SearchService built in this process over the stack's database (the
shared stack's workers have no LLM configured, and a test never reconfigures them).

Corpus: a few chunks about container orchestration that name Kubernetes, one that describes
the same thing without the word, and unrelated chunks. A plain full-text query for
"kubernetes" cannot find the one that does not say it; the words the others share can.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from aiohttp import web
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.kv import DiskKV
from edgeindex.search.enhance import EnhanceSettings, QueryEnhancer
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import Principal

from ..helpers import new_tenant, put_document, wait_document

NAMED = {
    "k8s-intro": "Kubernetes schedules container workloads across a cluster of nodes; the orchestration "
                 "layer restarts failed pods and balances replicas.",
    "k8s-ops": "Operating Kubernetes means watching cluster capacity: pods are scheduled onto nodes, and "
               "the orchestration controller keeps the desired replicas running.",
    "k8s-upgrade": "Upgrading Kubernetes drains each node in turn so the orchestration layer moves pods "
                   "and their replicas elsewhere in the cluster.",
}
UNNAMED = ("borg-notes", "Our orchestration platform places every container on cluster nodes, evicts pods "
                         "from a draining node and keeps enough replicas alive.")
OTHER = {
    "bakery": "The bakery opens at seven and sells rye bread, croissants and apple cake every morning.",
    "garden": "Tomatoes need full sun, regular watering and a stake once the plants grow tall.",
    "cycling": "The cycling club rides forty kilometres along the river every Sunday in summer.",
    "library": "The library lends books, films and board games, and runs a reading hour for children.",
    "weather": "Heavy rain is expected on the coast tomorrow, with strong winds in the afternoon.",
    "chess": "In the endgame a king and a rook can force checkmate against a lone king.",
    "tea": "Green tea is steeped at eighty degrees for two minutes; black tea takes boiling water.",
}


def search(tenant, body: dict) -> dict:
    status, answer = tenant.search.post("/search", {"cache": False, "entity_ids": [tenant.entity_id], **body})
    assert status == 200, answer
    return answer


@pytest.fixture(scope="module")
async def corpus(stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="en")
    for document_id, text in [*NAMED.items(), UNNAMED, *OTHER.items()]:
        put_document(t, document_id, text)
    for document_id in [*NAMED, UNNAMED[0], *OTHER]:
        assert (await wait_document(t, document_id))["status"] == "ready"
    return t


async def test_prf_expands_the_full_text_query_and_finds_what_the_plain_query_misses(corpus):
    plain = search(corpus, {"query": "kubernetes", "alpha": 0, "enhance": "none"})
    assert sorted(r["document_id"] for r in plain["results"]) == sorted(NAMED), plain
    assert "enhancement" not in plain

    expanded = search(corpus, {"query": "kubernetes", "alpha": 0, "enhance": ["prf"]})
    report = expanded["enhancement"]
    assert report["applied"] == ["prf"], report
    # the expansion terms are lexemes the feedback chunks share, never the query's own word
    assert {"orchestr", "cluster", "replica"} <= set(report["terms"]), report
    assert "kubernet" not in report["terms"]
    found = [r["document_id"] for r in expanded["results"]]
    assert UNNAMED[0] in found, expanded
    # the query's own word still ranks first: expansion terms weigh less
    assert set(found[:3]) == set(NAMED), found
    assert expanded["timings"]["enhance_ms"] > 0


async def test_prf_is_part_of_the_cache_key(corpus):
    body = {"query": "kubernetes", "alpha": 0, "cache": True}
    first = search(corpus, {**body, "enhance": "none"})
    second = search(corpus, {**body, "enhance": ["prf"]})
    assert second["cache"] == "none" and first["cache"] in ("none",)
    assert UNNAMED[0] in [r["document_id"] for r in second["results"]]
    assert UNNAMED[0] not in [r["document_id"] for r in first["results"]]


async def test_prf_gate_skips_without_first_pass_evidence(corpus):
    answer = search(corpus, {"query": "quasar", "alpha": 0, "enhance": ["prf"]})
    assert answer["enhancement"]["skipped"] == {"prf": "no first-pass match"}, answer
    assert answer["results"] == []


async def test_llm_enhancement_without_an_llm_is_a_400_naming_the_field(corpus):
    status, answer = corpus.search.post("/search", {"query": "kubernetes", "entity_ids": [corpus.entity_id],
                                                    "enhance": ["hyde"]})
    assert status == 400 and answer["field"] == "enhance", answer
    status, answer = corpus.search.post("/search", {"query": "kubernetes", "entity_ids": [corpus.entity_id],
                                                    "enhance": ["magic"]})
    assert status == 400 and answer["field"].startswith("enhance"), answer


# --- LLM modes against a local OpenAI-compatible server ---------------------------------------------------

class FakeLLM:
    """An OpenAI-compatible /chat/completions: answers by the system prompt's kind, counts calls, can stall."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.clients: list = []  # the chat clients of this test, closed with the server
        self.synonyms = "container orchestration platform"
        self.passage = UNNAMED[1]
        self.delay = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(body)
        await asyncio.sleep(self.delay)  # a slow model, for the time budget (not synchronisation)
        system = body["messages"][0]["content"]
        content = self.synonyms if "full-text index" in system else self.passage
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": content}}]})

    def kinds(self) -> list[str]:
        return ["synonyms" if "full-text index" in c["messages"][0]["content"] else "hyde" for c in self.calls]


@pytest.fixture
async def llm_server():
    fake = FakeLLM()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield fake, f"http://127.0.0.1:{port}/v1"
    for client in fake.clients:
        await client.close()
    await runner.cleanup()


class Background:
    def __init__(self) -> None:
        self.tasks = []

    def wait_until(self, coro) -> None:
        self.tasks.append(asyncio.ensure_future(coro))


def chat_client(fake: FakeLLM, base_url: str):
    from edgeindex.bindings.ai import OpenAIChat
    from edgeindex.config import AIService

    chat = OpenAIChat(AIService(provider="local", base_url=base_url, llm_model="fake-llm", timeout=30))
    fake.clients.append(chat)
    return chat


def service(db, tmp_path, fake: FakeLLM, base_url: str, *, budget: float = 5.0) -> SearchService:
    chat = chat_client(fake, base_url)
    kv = DiskKV(tmp_path / "kv", namespace="search")
    embedder = local_embedder()
    enhancer = QueryEnhancer(db=db, kv=kv, embedder=embedder, llm=chat, settings=EnhanceSettings(llm_budget=budget))
    return SearchService(db=db, kv=kv, embedder=embedder, semantic_cache=None, enhancer=enhancer,
                         settings=SearchSettings(max_k=100, max_query_chars=2000, semantic_threshold=0.95,
                                                 cache_ttl=60))


async def run(svc: SearchService, entity: str, body: dict) -> dict:
    principal = Principal(key_id="test", is_admin=True, entity_ids=frozenset())
    return await svc.search(principal, {"entity_ids": [entity], "cache": False, **body}, background=Background())


async def test_synonyms_are_requested_and_or_ed_into_the_full_text_query(db, corpus, llm_server, tmp_path):
    fake, url = llm_server
    svc = service(db, tmp_path, fake, url)
    # neither word is in any chunk (nor close to one: no typo stand-ins), so plain full text finds nothing
    plain = await run(svc, corpus.entity_id, {"query": "borg supervisor", "alpha": 0, "enhance": "none"})
    assert plain["results"] == [] and fake.calls == []
    answer = await run(svc, corpus.entity_id, {"query": "borg supervisor", "alpha": 0, "enhance": ["synonyms"]})
    assert fake.kinds() == ["synonyms"]
    assert fake.calls[0]["model"] == "fake-llm" and fake.calls[0]["messages"][1]["content"] == "borg supervisor"
    report = answer["enhancement"]
    assert report["applied"] == ["synonyms"] and report["synonyms"] == ["container orchestration platform"]
    found = [r["document_id"] for r in answer["results"]]
    assert found[0] == UNNAMED[0], answer  # the one chunk holding all three synonyms
    assert all(r["scores"]["text"] > 0 for r in answer["results"])


async def test_hyde_blends_the_hypothetical_answer_into_the_query_vector(db, corpus, llm_server, tmp_path):
    fake, url = llm_server
    svc = service(db, tmp_path, fake, url)
    query = "where do my workloads go when a machine is taken down"
    plain = await run(svc, corpus.entity_id, {"query": query, "alpha": 1, "enhance": "none", "k": 12})
    hyde = await run(svc, corpus.entity_id, {"query": query, "alpha": 1, "enhance": ["hyde"], "k": 12})
    assert fake.kinds() == ["hyde"] and hyde["enhancement"]["applied"] == ["hyde"], hyde
    # the vector searched with is the blend of the query's and the passage's: its cosine to each
    # chunk is what the response reports
    embedder = local_embedder()
    q = await embedder.embed_query(query)
    h = await embedder.embed_query(fake.passage)
    blended = q + h
    blended /= np.linalg.norm(blended)
    chunk = await db.fetchone("SELECT embedding FROM chunks WHERE entity_id = %s AND document_id = %s",
                              (corpus.entity_id, UNNAMED[0]))
    vector = chunk["embedding"].to_numpy().astype(np.float32)
    scores = {r["document_id"]: r["scores"]["vector"] for r in hyde["results"]}
    assert scores[UNNAMED[0]] == pytest.approx(float(vector @ blended), abs=2e-3)
    plain_scores = {r["document_id"]: r["scores"]["vector"] for r in plain["results"]}
    assert plain_scores[UNNAMED[0]] == pytest.approx(float(vector @ q), abs=2e-3)
    assert hyde["results"][0]["document_id"] == UNNAMED[0], hyde


async def test_llm_timeout_falls_back_to_the_plain_query(db, corpus, llm_server, tmp_path):
    fake, url = llm_server
    fake.delay = 2.0
    svc = service(db, tmp_path, fake, url, budget=0.3)
    body = {"query": "borg supervisor", "alpha": 0.5, "enhance": ["synonyms", "hyde"]}
    answer = await run(svc, corpus.entity_id, body)
    plain = await run(svc, corpus.entity_id, {**body, "enhance": "none"})
    report = answer["enhancement"]
    assert report["applied"] == [] and report["llm"] == {"synonyms": "timeout", "hyde": "timeout"}, report
    assert report["ms"] < 1500
    assert [r["chunk_id"] for r in answer["results"]] == [r["chunk_id"] for r in plain["results"]]
    assert [r["score"] for r in answer["results"]] == [r["score"] for r in plain["results"]]


async def test_llm_answers_are_cached(db, corpus, llm_server, tmp_path):
    fake, url = llm_server
    svc = service(db, tmp_path, fake, url)
    body = {"query": "borg supervisor", "alpha": 0.5, "enhance": ["synonyms", "hyde"]}
    first = await run(svc, corpus.entity_id, body)
    assert sorted(fake.kinds()) == ["hyde", "synonyms"]
    assert first["enhancement"]["llm"] == {"synonyms": "llm", "hyde": "llm"}
    second = await run(svc, corpus.entity_id, body)
    assert len(fake.calls) == 2, fake.kinds()  # nothing asked again
    assert second["enhancement"]["llm"] == {"synonyms": "cache", "hyde": "cache"}
    assert [r["chunk_id"] for r in second["results"]] == [r["chunk_id"] for r in first["results"]]


@pytest.mark.parametrize("query, reason", [
    ("kubernetes orchestration cluster", "first pass strong"),   # its words found their chunks
    ("order 4711-ab", "identifiers"),                            # codes have no synonyms
    ('"container orchestration"', "quoted phrase"),
])
async def test_gate_skips_the_llm_where_it_cannot_gain(db, corpus, llm_server, tmp_path, query, reason):
    fake, url = llm_server
    svc = service(db, tmp_path, fake, url)
    answer = await run(svc, corpus.entity_id, {"query": query, "alpha": 0.5, "enhance": ["synonyms", "hyde"]})
    assert fake.calls == []
    skipped = answer["enhancement"]["skipped"]
    assert set(skipped) == {"synonyms", "hyde"} and all(v.startswith(reason) for v in skipped.values()), skipped


# --- chunk enrichment -----------------------------------------------------------------------------------

async def test_chunk_enrichment_is_generated_and_indexed_at_a_lower_weight(db, stack, upload_admin, llm_server):
    from edgeindex.ingest.enrich import ENRICH_PROMPT, enrich_chunks

    fake, url = llm_server
    fake.passage = "- Kubernetes\n- how are pods moved off a draining node?"
    chat = chat_client(fake, url)
    (generated,) = await enrich_chunks(chat, [UNNAMED[1]])
    assert fake.calls[0]["messages"] == [{"role": "system", "content": ENRICH_PROMPT},
                                         {"role": "user", "content": UNNAMED[1]}]
    assert generated == "Kubernetes\nhow are pods moved off a draining node?"

    t = new_tenant(stack, upload_admin, prefix="ec")
    put_document(t, UNNAMED[0], UNNAMED[1])
    put_document(t, "k8s-intro", NAMED["k8s-intro"])
    for document_id in (UNNAMED[0], "k8s-intro"):
        assert (await wait_document(t, document_id))["status"] == "ready"
    before = search(t, {"query": "kubernetes", "alpha": 0, "enhance": "none"})
    assert [r["document_id"] for r in before["results"]] == ["k8s-intro"]

    # what the ingest workflow's insert_staged_chunks writes when ENRICH_CHUNKS is on (shared/sql/ingest_grouped.sql)
    await db.execute("UPDATE chunks SET enrichment = %s WHERE entity_id = %s AND document_id = %s",
                     (generated, t.entity_id, UNNAMED[0]))
    row = await db.fetchone("SELECT tsv::text AS tsv FROM chunks WHERE entity_id = %s AND document_id = %s",
                            (t.entity_id, UNNAMED[0]))
    assert "'kubernet':" in row["tsv"] and row["tsv"].split("'kubernet':")[1].split()[0].endswith("C"), row
    assert "'orchestr':" in row["tsv"] and not row["tsv"].split("'orchestr':")[1].split()[0].endswith("C")
    df = await db.fetchone("SELECT df FROM term_stats WHERE entity_id = %s AND term = 'kubernet'", (t.entity_id,))
    assert df["df"] == 2  # the term statistics count the enriched chunk too

    after = search(t, {"query": "kubernetes", "alpha": 0, "enhance": "none"})
    scores = {r["document_id"]: r["scores"]["text"] for r in after["results"]}
    # found through its enrichment, below the chunk that says the word itself
    assert [r["document_id"] for r in after["results"]] == ["k8s-intro", UNNAMED[0]], after
    assert 0 < scores[UNNAMED[0]] < 0.8 * scores["k8s-intro"], scores
