"""`order: "reverse"` on POST /search: the same results, best last (also when served from the cache)."""

from __future__ import annotations

from ..helpers import new_tenant, put_document, wait_document

DOCS = {
    "vacuum": "Autovacuum removes dead tuples and keeps table statistics fresh.",
    "index": "A B-tree index speeds up equality and range lookups on a column.",
    "wal": "The write-ahead log records every change before it reaches the data files.",
}


async def test_reverse_order_returns_the_same_results_best_last(stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="or")
    for d, text in DOCS.items():
        put_document(t, d, text)
    for d in DOCS:
        assert (await wait_document(t, d))["status"] == "ready"
    body = {"query": "how does autovacuum remove dead tuples", "k": 3, "entity_ids": [t.entity_id]}

    status, best_first = t.search.post("/search", {**body, "cache": False})
    assert status == 200, best_first
    ranked = [r["chunk_id"] for r in best_first["results"]]
    assert len(ranked) == 3 and best_first["results"][0]["document_id"] == "vacuum"

    for cache in (True, True):  # a miss that stores, then the exact-cache hit
        status, reverse = t.search.post("/search", {**body, "cache": cache, "order": "reverse"})
        assert status == 200, reverse
        assert [r["chunk_id"] for r in reverse["results"]] == ranked[::-1], reverse
    assert reverse["cache"] == "exact"
    # the reversed entry is not served to a best-first search
    status, again = t.search.post("/search", {**body, "cache": True})
    assert [r["chunk_id"] for r in again["results"]] == ranked


def test_unknown_order_names_the_field(stack, upload_admin):
    t = new_tenant(stack, upload_admin, prefix="ob")
    status, answer = t.search.post("/search", {"query": "x", "entity_ids": [t.entity_id], "order": "worst"})
    assert status == 400 and answer["field"] == "order", answer
