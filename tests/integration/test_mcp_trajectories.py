"""Trajectories over MCP with the SDK's own client against the shared stack: a trajectory lives in the
KV, so a step over HTTP (the search worker) and the next over MCP (the mcp worker, another process)
are steps of one trajectory; ``expand`` never repeats a chunk; the ``trajectory`` tool is the
grounding; bad ids get the HTTP API's errors."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid

import jsonschema
import pytest

from ..helpers import TOPICS, Tenant, document, new_tenant, paragraph, put_document, wait_document
from .test_mcp import call, http_session, ok
from .test_trajectories import ids, new_id
from .test_trajectories import search as http_search

DOCS = {
    # one chunk per paragraph: rivers at 0, mountains 1, ... oceans 4
    "atlas": document([paragraph(topic) for topic in TOPICS]),
    "bread": "To bake sourdough bread, feed the starter the night before and let the dough rise slowly.",
    "ovens": "A stone oven holds heat for hours; bakers load the loaves once the flames have died down.",
    "crumb": "An open crumb needs a wet dough, a long cold proof and a hot oven with steam for the first minutes.",
    "offboarding": "Offboarding a supplier: revoke their accounts, collect badges, and confirm in writing that "
                   "confidential documents were returned or destroyed.",
}
STEP_KEYS = {"id", "step", "novelty", "tokens", "left_out"}


@pytest.fixture(scope="module")
async def corpus(stack, upload_admin) -> Tenant:
    made = new_tenant(stack, upload_admin, prefix="mtj")
    for doc_id, text in DOCS.items():
        put_document(made, doc_id, text, title=doc_id)
    ready = await asyncio.gather(*(wait_document(made, d) for d in DOCS))
    assert [d["status"] for d in ready] == ["ready"] * len(DOCS)
    return made


def pid(stack, worker: str) -> int:
    with urllib.request.urlopen(stack.url(worker) + "/health", timeout=30) as resp:
        return json.loads(resp.read())["pid"]


async def test_a_step_over_http_then_the_next_over_mcp_in_another_process(stack, corpus):
    assert pid(stack, "search") != pid(stack, "mcp")  # two processes, one KV
    t = new_id()
    query = {"query": "baking bread in an oven", "k": 2, "cache": False}
    first = http_search(corpus, {**query, "trajectory": t})
    assert first["trajectory"]["step"] == 1 and len(first["results"]) == 2
    async with http_session(stack, corpus.key) as session:
        schema = {t.name: t for t in (await session.list_tools()).tools}["search"].output_schema
        result = await session.call_tool("search", {**query, "trajectory": t})
        assert not result.is_error and result.structured_content is not None, result
        jsonschema.validate(result.structured_content, schema)
        second = result.structured_content
        marked = await ok(session, "search", {**query, "k": 4, "trajectory": t, "seen": "mark"})
    assert len(second["results"]) == 2 and set(ids(second)).isdisjoint(ids(first))
    step = second["trajectory"]
    assert set(step) == STEP_KEYS, step  # compact: the trajectory's totals are the trajectory tool's
    assert (step["id"], step["step"]) == (t, 2)
    assert step["novelty"] == {"chunks": 0.0, "documents": 0.0}  # a plain search would repeat step 1
    assert step["left_out"] >= 2
    assert step["tokens"]["total"] == first["trajectory"]["tokens"]["total"] + step["tokens"]["step"] > 0
    had = set(ids(first)) | set(ids(second))
    assert all(r["seen"] == (r["chunk_id"] in had) for r in marked["results"]), marked
    assert set(ids(first)) <= {r["chunk_id"] for r in marked["results"] if r["seen"]}
    assert marked["trajectory"]["step"] == 3 and marked["trajectory"]["left_out"] == 0
    # and back over HTTP: the search worker sees the step the mcp worker recorded
    third = http_search(corpus, {**query, "trajectory": t})
    assert third["trajectory"]["step"] == 4 and set(ids(third)).isdisjoint(had)


async def test_expand_over_mcp_never_repeats_a_chunk(stack, corpus):
    t = new_id()
    async with http_session(stack, corpus.key) as session:
        found = await ok(session, "search", {"query": "the mountains chapter", "k": 1, "trajectory": t,
                                             "cache": False})
        hit = found["results"][0]
        assert (hit["document_id"], hit["citation"]["position"]) == ("atlas", 1)
        around = await ok(session, "expand", {"trajectory": t, "chunk_id": hit["chunk_id"], "k": 2})
        further = await ok(session, "expand", {"trajectory": t, "chunk_id": hit["chunk_id"], "mode": "neighbours",
                                               "k": 2})
        rest = await ok(session, "expand", {"trajectory": t, "chunk_id": hit["chunk_id"], "mode": "document",
                                            "k": 5})
        similar = await ok(session, "expand", {"trajectory": t, "chunk_id": hit["chunk_id"], "mode": "similar",
                                               "k": 3})
    assert sorted(r["citation"]["position"] for r in around["results"]) == [0, 2]
    assert [r["citation"]["position"] for r in further["results"]] == [3, 4]
    assert rest["results"] == [] and rest["trajectory"]["novelty"]["chunks"] == 0.0  # the whole atlas is in hand
    assert "atlas" not in {r["document_id"] for r in similar["results"]}
    returned = [hit["chunk_id"]] + [c for answer in (around, further, rest, similar) for c in ids(answer)]
    assert len(returned) == len(set(returned)) == 1 + 2 + 2 + 0 + len(similar["results"])
    for answer in (around, further, similar):
        top = answer["results"][0]
        assert set(top) >= {"chunk_id", "document_id", "title", "score", "snippet", "citation"}, top
        assert set(answer["trajectory"]) == STEP_KEYS
    assert [a["trajectory"]["step"] for a in (around, further, rest, similar)] == [2, 3, 4, 5]


async def test_the_trajectory_tool_lists_the_queries_of_steps_over_http_and_mcp(stack, corpus):
    t = new_id()
    a = http_search(corpus, {"query": "sourdough starter", "k": 1, "trajectory": t})
    async with http_session(stack, corpus.key) as session:
        b = await ok(session, "search", {"query": "supplier offboarding", "k": 1, "trajectory": t, "cache": False})
        grounding = await ok(session, "trajectory", {"trajectory": t})
    status, over_http = corpus.search.get(f"/trajectories/{t}")
    assert status == 200, over_http
    assert [q["query"] for q in grounding["queries"]] == ["sourdough starter", "supplier offboarding"]
    assert grounding["queries"] == over_http["queries"]
    assert (grounding["id"], grounding["steps"], grounding["tokens"]) == (t, 2, over_http["tokens"])
    assert [c["chunk_id"] for c in grounding["chunks"]] == ids(a) + ids(b)
    assert [c["step"] for c in grounding["chunks"]] == [1, 2] and all(c["current"] for c in grounding["chunks"])
    assert [c["snippet"] for c in grounding["chunks"]] == [a["results"][0]["text"], b["results"][0]["snippet"]]
    assert [(d["document_id"], d["title"]) for d in grounding["documents"]] == [("bread", "bread"),
                                                                               ("offboarding", "offboarding")]
    assert all(d["summary"] and d["current"] for d in grounding["documents"])


@pytest.mark.parametrize("tool, arguments, method, path, body", [
    ("search", {"query": "x", "trajectory": "bad id!"}, "POST", "/search", {"query": "x", "trajectory": "bad id!"}),
    ("search", {"query": "x", "trajectory": 7}, "POST", "/search", {"query": "x", "trajectory": 7}),
    ("search", {"query": "x", "seen": "exclude"}, "POST", "/search", {"query": "x", "seen": "exclude"}),
    ("search", {"query": "x", "trajectory": "t1", "seen": "hide"}, "POST", "/search",
     {"query": "x", "trajectory": "t1", "seen": "hide"}),
    ("trajectory", {"trajectory": "t-none"}, "GET", "/trajectories/t-none", None),
    ("expand", {"trajectory": "t-none", "chunk_id": str(uuid.UUID(int=1))}, "POST", "/trajectories/t-none/expand",
     {"chunk_id": str(uuid.UUID(int=1))}),
    ("expand", {"trajectory": "t-none", "chunk_id": "x"}, "POST", "/trajectories/t-none/expand", {"chunk_id": "x"}),
    ("expand", {"trajectory": "t-none", "chunk_id": str(uuid.UUID(int=1)), "mode": "all"}, "POST",
     "/trajectories/t-none/expand", {"chunk_id": str(uuid.UUID(int=1)), "mode": "all"}),
], ids=["search: bad id", "search: id not a string", "search: seen without one", "search: unknown seen",
        "trajectory: unknown", "expand: unknown trajectory", "expand: bad chunk id", "expand: unknown mode"])
async def test_a_bad_trajectory_gets_the_http_apis_error(stack, corpus, tool, arguments, method, path, body):
    status, over_http = corpus.search.request(method, path, body)
    assert status in (400, 404), over_http
    async with http_session(stack, corpus.key) as session:
        error, answer = await call(session, tool, arguments)
    assert error and (answer["error"], answer["field"]) == (over_http["error"], over_http["field"]), answer


async def test_another_keys_trajectory_is_not_found_over_mcp(stack, upload_admin, corpus):
    t = new_id()
    hit = http_search(corpus, {"query": "sourdough", "k": 1, "trajectory": t})["results"][0]
    other = new_tenant(stack, upload_admin, prefix="mtk")
    async with http_session(stack, other.key) as session:
        for tool, arguments in [("trajectory", {"trajectory": t}),
                                ("expand", {"trajectory": t, "chunk_id": hit["chunk_id"]})]:
            error, answer = await call(session, tool, arguments)
            assert error and (answer["error"], answer["field"]) == ("not_found", "trajectory"), (tool, answer)
        # a malformed id is refused by the tool's schema, naming the same field
        error, answer = await call(session, "trajectory", {"trajectory": "bad id!"})
        assert error and (answer["error"], answer["field"]) == ("invalid_request", "trajectory"), answer
