"""Trajectories over HTTP against the real stack (upload → ingest → search worker; Postgres, KV,
the real model): a search that names a trajectory leaves out what the trajectory returned before,
counts copies across documents once, reports novelty and tokens, and GET returns its grounding."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

import pytest
from edgeindex import copies
from edgeindex.token_count import count_tokens

from ..helpers import TOPICS, Tenant, document, new_tenant, paragraph, put_document, wait_document

# a chunk's worth of text: one clause, pasted into two contracts under different headings
CLAUSE = ("Either party may terminate this agreement with ninety days written notice to the other party. Fees paid "
          "for the current term are not refunded, except where the supplier is in material breach and has not cured "
          "the breach within thirty days of being told of it in writing. On termination each party returns or "
          "destroys the other party's confidential information, and certifies in writing that it has done so; "
          "clauses on liability, confidentiality and governing law survive the end of the agreement.")
DOCS = {
    "contract-a": f"Supply contract with Northwind.\n\n{CLAUSE}",
    "contract-b": f"Service contract with Contoso.\n\n{CLAUSE.replace('ninety', '90')}",
    "renewal": "Renewals: the agreement renews each year unless a party gives notice of termination before "
               "the renewal date; the new term's fees follow the price list.",
    "offboarding": "Offboarding a supplier: revoke their accounts, collect badges, and confirm in writing that "
                   "confidential documents were returned or destroyed.",
    "bread": "To bake sourdough bread, feed the starter the night before and let the dough rise slowly.",
    # one chunk per paragraph (each is about CHUNK_TOKENS): rivers at 0, mountains 1, ... oceans 4
    "atlas": document([paragraph(topic) for topic in TOPICS]),
    "ovens": "A stone oven holds heat for hours; bakers load the loaves once the flames have died down.",
}


@dataclass
class Corpus:
    tenant: Tenant
    other: Tenant


@pytest.fixture(scope="module")
async def corpus(stack, upload_admin) -> Corpus:
    tenant = new_tenant(stack, upload_admin, prefix="tj")
    for doc_id, text in DOCS.items():
        put_document(tenant, doc_id, text, title=doc_id)
    ready = await asyncio.gather(*(wait_document(tenant, d) for d in DOCS))
    assert [d["status"] for d in ready] == ["ready"] * len(DOCS)
    return Corpus(tenant, new_tenant(stack, upload_admin, prefix="tk"))


def search(tenant: Tenant, body: dict) -> dict:
    status, answer = tenant.search.post("/search", {"cache": False, **body})
    assert status == 200, answer
    return answer


def ids(answer: dict) -> list[str]:
    return [r["chunk_id"] for r in answer["results"]]


def new_id() -> str:
    return f"tr-{uuid.uuid4().hex[:10]}"


def test_a_second_search_in_a_trajectory_returns_none_of_the_firsts_chunks(corpus):
    t = new_id()
    query = {"query": "baking bread in an oven", "k": 2}
    first = search(corpus.tenant, {**query, "trajectory": t})
    second = search(corpus.tenant, {**query, "trajectory": t})
    assert len(first["results"]) == 2 and len(second["results"]) == 2
    assert set(ids(first)).isdisjoint(ids(second))
    assert first["trajectory"]["step"] == 1 and second["trajectory"]["step"] == 2
    assert first["trajectory"]["novelty"]["chunks"] == 1.0
    assert second["trajectory"]["novelty"]["chunks"] == 0.0  # a plain search would repeat the first step
    assert second["trajectory"]["left_out"] >= 2 and second["trajectory"]["chunks"] == 4
    # no copies here: each step is the best unseen of the plain search at the step's depth (2k; hybrid
    # fusion's order at the tail depends on how deep it looks)
    deeper = ids(search(corpus.tenant, {**query, "k": 4}))
    assert ids(first) == deeper[:2]
    assert ids(second) == [c for c in deeper if c not in ids(first)][:2]


def test_a_step_past_the_first_searchs_depth_answers_what_the_search_ranks_next(corpus):
    """The third step's first search (2k) holds only the four chunks already returned: the step goes on
    with that search's embedding and blend (SearchService.more) and answers what the search ranks next."""
    t = new_id()
    query = {"query": "baking bread in an oven", "k": 2}
    steps = [search(corpus.tenant, {**query, "trajectory": t}) for _ in range(3)]
    seen = ids(steps[0]) + ids(steps[1])
    assert len(set(seen)) == 4
    assert len(ids(steps[2])) == 2 and set(ids(steps[2])).isdisjoint(seen)
    following = ids(search(corpus.tenant, {**query, "k": 8, "filters": {"exclude_chunk_ids": seen}}))
    assert ids(steps[2]) == following[:2]
    assert steps[2]["trajectory"]["left_out"] == 4 and steps[2]["trajectory"]["chunks"] == 6


def test_copies_across_two_documents_count_once(corpus):
    query = {"query": "terminate with ninety days written notice, fees not refunded", "k": 6}
    plain = search(corpus.tenant, query)
    both = {r["document_id"] for r in plain["results"] if CLAUSE[:40].lower() in (r["text"] or "").lower()
            or "90 days" in (r["text"] or "")}
    assert both == {"contract-a", "contract-b"}  # without a trajectory, both copies come back
    answer = search(corpus.tenant, {**query, "trajectory": new_id()})
    clause_docs = [r["document_id"] for r in answer["results"]
                   if r["document_id"] in ("contract-a", "contract-b") and "notice" in r["text"]]
    assert len(clause_docs) == 1
    assert answer["trajectory"]["left_out"] >= 1


def test_seen_include_and_mark(corpus):
    t = new_id()
    query = {"query": "sourdough bread and ovens", "k": 2}
    first = search(corpus.tenant, {**query, "trajectory": t})
    again = search(corpus.tenant, {**query, "trajectory": t, "seen": "include"})
    assert ids(again) == ids(first)
    marked = search(corpus.tenant, {**query, "k": 3, "trajectory": t, "seen": "mark"})
    flags = {r["chunk_id"]: r["seen"] for r in marked["results"]}
    assert [flags[c] for c in ids(first)] == [True, True] and list(flags.values()).count(False) == 1


def test_a_cached_answer_is_filtered_by_the_trajectory(corpus):
    t = new_id()
    # no copies among its best four (the contract clause's would send the second step past the cached
    # answer, to a deeper search)
    query = {"query": "baking loaves of bread in a stone oven", "k": 2, "cache": True}
    first = search(corpus.tenant, {**query, "trajectory": t})
    # every step asks the search for 2k: the first step's search stored that answer, as a plain one
    status, plain = corpus.tenant.search.post("/search", {**query, "k": 4})
    assert status == 200 and plain["cache"] == "exact"
    second = search(corpus.tenant, {**query, "trajectory": t})
    assert second["cache"] == "exact"
    assert set(ids(second)).isdisjoint(ids(first))
    assert len(ids(second)) == 2 and set(ids(second)) <= set(ids(plain))  # the cached answer, filtered
    status, after = corpus.tenant.search.post("/search", {**query, "k": 4})
    assert ids(after) == ids(plain)  # the stored answer is the search's, not the trajectory's view


async def test_ingestion_stores_each_chunks_copy_signature_and_tokens(corpus, db):
    rows = await db.fetch("SELECT content, copy_fingerprint, copy_simhash, context_tokens FROM chunks "
                          "WHERE entity_id = %s", (corpus.tenant.entity_id,))
    assert len(rows) >= len(DOCS)
    for row in rows:
        assert (row["copy_fingerprint"], row["copy_simhash"]) == copies.signature(row["content"])
        assert row["context_tokens"] == count_tokens(row["content"])
    # the pasted clause: one fingerprint in both contracts (the "90" edit is a near-copy, its own)
    assert sum(r["copy_simhash"] is None for r in rows) < len(rows)


def test_tokens_are_those_of_the_text_returned(corpus):
    t = new_id()
    answer = search(corpus.tenant, {"query": "supplier offboarding", "k": 2, "trajectory": t})
    expected = sum(count_tokens(r["text"]) for r in answer["results"])
    assert answer["trajectory"]["tokens"] == {"step": expected, "total": expected}
    lean = search(corpus.tenant, {"query": "renewal of the agreement", "k": 1, "trajectory": t,
                                  "include": {"text": False}})
    assert "text" not in lean["results"][0] and lean["trajectory"]["tokens"] == {"step": 0, "total": expected}


def test_the_grounding_lists_documents_queries_and_chunks(corpus):
    status, made = corpus.tenant.search.post("/trajectories", {})
    assert status == 201 and made["steps"] == 0, made
    t = made["id"]
    a = search(corpus.tenant, {"query": "sourdough starter", "k": 1, "trajectory": t})
    b = search(corpus.tenant, {"query": "supplier offboarding", "k": 1, "trajectory": t})
    status, grounding = corpus.tenant.search.get(f"/trajectories/{t}")
    assert status == 200, grounding
    assert [q["query"] for q in grounding["queries"]] == ["sourdough starter", "supplier offboarding"]
    assert [c["chunk_id"] for c in grounding["chunks"]] == ids(a) + ids(b)
    assert [c["text"] for c in grounding["chunks"]] == [a["results"][0]["text"], b["results"][0]["text"]]
    assert [(d["document_id"], d["current"]) for d in grounding["documents"]] == [("bread", True),
                                                                                  ("offboarding", True)]
    assert all(d["summary"] for d in grounding["documents"])
    assert grounding["tokens"] == a["trajectory"]["tokens"]["step"] + b["trajectory"]["tokens"]["step"]
    assert corpus.tenant.search.delete(f"/trajectories/{t}")[0] == 200
    assert corpus.tenant.search.get(f"/trajectories/{t}")[0] == 404


def test_another_key_neither_sees_nor_shares_a_trajectory(corpus, stack, upload_admin):
    t = new_id()
    search(corpus.tenant, {"query": "sourdough", "k": 1, "trajectory": t})
    status, body = corpus.other.search.get(f"/trajectories/{t}")
    assert status == 404 and body["field"] == "trajectory"
    status, made = corpus.tenant.search.post("/trajectories", {"id": t})
    assert status == 409 and made["field"] == "trajectory"


@pytest.mark.parametrize("body, field", [
    ({"query": "x", "seen": "exclude"}, "seen"),
    ({"query": "x", "trajectory": "bad id!"}, "trajectory"),
    ({"query": "x", "trajectory": "t1", "seen": "sometimes"}, "seen"),
    ({"query": "", "trajectory": "t1"}, "query"),
    ({"query": "x", "trajectory": "t1", "k": 0}, "k"),
])
def test_bad_trajectory_fields_are_a_400_naming_them(corpus, body, field):
    status, answer = corpus.tenant.search.post("/search", body)
    assert status == 400 and answer["field"] == field, answer


def expand(tenant: Tenant, trajectory: str, body: dict) -> dict:
    status, answer = tenant.search.post(f"/trajectories/{trajectory}/expand", body)
    assert status == 200, answer
    return answer


def test_expand_widens_around_a_chunk_and_never_repeats(corpus):
    t = new_id()
    hit = search(corpus.tenant, {"query": "the mountains chapter", "k": 1, "trajectory": t})["results"][0]
    assert (hit["document_id"], hit["position"]) == ("atlas", 1)
    around = expand(corpus.tenant, t, {"chunk_id": hit["chunk_id"], "mode": "neighbours", "k": 2})
    assert sorted(r["position"] for r in around["results"]) == [0, 2]
    further = expand(corpus.tenant, t, {"chunk_id": hit["chunk_id"], "mode": "neighbours", "k": 2})
    assert [r["position"] for r in further["results"]] == [3, 4]
    rest = expand(corpus.tenant, t, {"chunk_id": hit["chunk_id"], "mode": "document", "k": 5})
    assert rest["results"] == [] and rest["trajectory"]["chunks"] == 5  # the whole document is in hand
    again = search(corpus.tenant, {"query": "the mountains chapter", "k": 3, "trajectory": t})
    assert "atlas" not in {r["document_id"] for r in again["results"]}


def test_expand_similar_finds_other_documents_and_skips_copies(corpus):
    t = new_id()
    hit = search(corpus.tenant, {"query": "terminate with ninety days written notice", "k": 1,
                                 "trajectory": t})["results"][0]
    assert hit["document_id"] in ("contract-a", "contract-b")
    similar = expand(corpus.tenant, t, {"chunk_id": hit["chunk_id"], "mode": "similar", "k": 3})
    found = [r["document_id"] for r in similar["results"]]
    assert len(found) == 3 and not {"contract-a", "contract-b"} & set(found)  # the other copy is left out
    assert found[0] in ("renewal", "offboarding")
    assert similar["trajectory"]["left_out"] >= 1


def test_expand_takes_only_a_chunk_the_trajectory_returned(corpus):
    t = new_id()
    search(corpus.tenant, {"query": "sourdough", "k": 1, "trajectory": t})
    status, body = corpus.tenant.search.post(f"/trajectories/{t}/expand",
                                             {"chunk_id": str(uuid.uuid4()), "mode": "similar"})
    assert status == 404 and body["field"] == "chunk_id"
    status, body = corpus.tenant.search.post(f"/trajectories/{t}/expand", {"chunk_id": "x", "mode": "similar"})
    assert status == 400 and body["field"] == "chunk_id"
