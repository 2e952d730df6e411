"""POST /search with a body the search process has seen before (search/request_memo.py): the memo of
its parse and keys never crosses a grant, and a hit's spliced JSON is the answer's."""

from __future__ import annotations

import asyncio

from ..helpers import new_tenant, put_document, wait_document

BODY = {"query": "how do I bake sourdough bread", "k": 3}   # no entity_ids: each key's own grant


async def _tenant(stack, upload_admin, doc_id: str, text: str):
    tenant = new_tenant(stack, upload_admin, prefix="hp")
    put_document(tenant, doc_id, text, source="wiki")
    assert (await wait_document(tenant, doc_id))["status"] == "ready"
    return tenant


def _search(tenant):
    status, answer = tenant.search.post("/search", BODY)
    assert status == 200, answer
    return answer


async def test_the_same_body_from_two_grants_gets_each_its_own_answer(stack, upload_admin):
    first, second = await asyncio.gather(
        _tenant(stack, upload_admin, "bread", "To bake sourdough bread, feed the starter the night before."),
        _tenant(stack, upload_admin, "rye", "Rye bread needs a sour starter and a long, cool proof."))
    for _ in range(3):   # a miss, then hits from the KV and from the process's memory, both grants
        mine, theirs = _search(first), _search(second)
        assert mine["entity_ids"] == [first.entity_id] and theirs["entity_ids"] == [second.entity_id]
        assert {r["document_id"] for r in mine["results"]} == {"bread"}
        assert {r["document_id"] for r in theirs["results"]} == {"rye"}
        assert {r["entity_id"] for r in mine["results"]} == {first.entity_id}
    assert mine["cache"] == theirs["cache"] == "exact"


async def test_a_hit_is_the_stored_answer_with_its_own_fields(stack, upload_admin):
    tenant = await _tenant(stack, upload_admin, "bread", "To bake sourdough bread, feed the starter the night before.")
    missed = _search(tenant)
    hits = [_search(tenant) for _ in range(3)]
    assert [h["cache"] for h in hits] == ["exact"] * 3
    fields = ("count", "cache", "took_ms", "search_id", "timings")
    for hit in hits:
        assert {k: v for k, v in hit.items() if k not in fields} == {k: v for k, v in missed.items() if k not in fields}
        assert hit["count"] == len(hit["results"]) == len(missed["results"])
    assert len({h["search_id"] for h in [missed, *hits]}) == 4   # each answer its own search id
    # the spliced JSON's keys come in the order of the dict answer's (json.loads keeps the order)
    assert all(list(hit) == [k for k in missed if k != "timings"] for hit in hits)
