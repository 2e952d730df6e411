"""Search caches over HTTP: exact and semantic hits, and invalidation by real ingestion.

Each test uses its own tenant, so cache entries of one test never answer another.
"""

from __future__ import annotations

import asyncio
import threading
import time

from ..helpers import new_tenant, put_document, wait_document, wait_for

DOCS = {
    "bread": "To bake sourdough bread, feed the starter the night before, mix flour, water and salt, and let the "
             "dough rise slowly in a cool kitchen.",
    "vacuum": "PostgreSQL autovacuum reclaims storage held by dead tuples. Lower autovacuum_vacuum_scale_factor on "
              "large, busy tables so vacuum runs more often.",
    "k8s": "Kubernetes schedules pods onto nodes; the kube-scheduler weighs resource requests, taints and affinity "
           "rules before binding a pod.",
}


async def _tenant_with_docs(stack, upload_admin, docs=DOCS):
    tenant = new_tenant(stack, upload_admin, prefix="c")
    for doc_id, text in docs.items():
        put_document(tenant, doc_id, text, source="wiki")
    for doc in await asyncio.gather(*(wait_document(tenant, d) for d in docs)):
        assert doc["status"] == "ready", doc
    return tenant


def _search(tenant, body):
    status, answer = tenant.search.post("/search", body)
    assert status == 200, answer
    return answer


def _chunks(answer) -> list[str]:
    return [r["chunk_id"] for r in answer["results"]]


async def _remembered(db, query: str) -> bool:
    row = await db.fetchone("SELECT count(*) AS n FROM vector_index WHERE index_name = 'query-cache' "
                            "AND metadata->>'query' = %(q)s", {"q": query})
    return row["n"] > 0


async def test_exact_cache(stack, upload_admin):
    tenant = await _tenant_with_docs(stack, upload_admin)
    body = {"query": "how do I bake sourdough bread", "k": 3}
    first = _search(tenant, body)
    second = _search(tenant, body)
    assert (first["cache"], second["cache"]) == ("none", "exact")
    assert second["results"] == first["results"]
    # the key is the normalized query: case and spacing do not matter
    assert _search(tenant, {**body, "query": "  How do I   BAKE sourdough bread "})["cache"] == "exact"
    # every parameter is part of the key
    assert _search(tenant, {**body, "k": 2})["cache"] == "none"
    assert _search(tenant, {**body, "alpha": 0.2})["cache"] == "none"
    assert _search(tenant, {**body, "filters": {"sources": ["wiki"]}})["cache"] == "none"
    # and cache: false neither reads nor writes
    assert _search(tenant, {**body, "query": "sourdough starter", "cache": False})["cache"] == "none"
    assert _search(tenant, {**body, "query": "sourdough starter"})["cache"] == "none"


async def test_semantic_cache(stack, upload_admin, db):
    tenant = await _tenant_with_docs(stack, upload_admin)
    first = _search(tenant, {"query": "how do i make sourdough"})
    assert first["cache"] == "none"
    await wait_for(lambda: _remembered(db, "how do i make sourdough"), timeout=10)
    paraphrase = _search(tenant, {"query": "how to make sourdough"})  # cosine 0.99 with the first
    assert paraphrase["cache"] == "semantic"
    assert paraphrase["results"] == first["results"]
    # below the threshold (0.89): a search of its own
    assert _search(tenant, {"query": "sourdough recipe"})["cache"] == "none"
    # another scope (filters) never shares a semantic entry
    assert _search(tenant, {"query": "how to make sourdough", "filters": {"tags": ["x"]}})["cache"] == "none"
    # nor does another tenant asking the same
    other = await _tenant_with_docs(stack, upload_admin, {"bread": DOCS["bread"]})
    assert _search(other, {"query": "how to make sourdough"})["cache"] == "none"


async def test_update_retires_the_entitys_cached_results_and_recomputes_them(stack, upload_admin, db):
    # Any change in an entity retires its cached results (a new or changed document may belong in
    # any of them); the answers that did not involve the document come back the same.
    tenant = await _tenant_with_docs(stack, upload_admin)
    only = {d: {"query": "what does this document say", "filters": {"document_ids": [d]}} for d in DOCS}
    broad = {"query": "sourdough bread and postgres autovacuum", "k": 10}
    before = {d: _search(tenant, body) for d, body in only.items()}
    before_broad = _search(tenant, broad)
    assert all(_search(tenant, body)["cache"] == "exact" for body in only.values())
    assert _search(tenant, broad)["cache"] == "exact"

    put_document(tenant, "bread", "Rye bread needs a long, cold proof; the crumb stays dense and moist.",
                 source="wiki")
    doc = await wait_document(tenant, "bread", version=2)
    assert doc["status"] == "ready" and doc["version"] == 2

    after = {d: _search(tenant, body) for d, body in only.items()}
    assert after["bread"]["cache"] == "none"                       # held the updated document: dropped
    assert after["vacuum"]["cache"] == after["k8s"]["cache"] == "none"  # computed before the change: retired
    assert after["vacuum"]["results"] == before["vacuum"]["results"]  # ... and recomputed the same
    assert _search(tenant, only["vacuum"])["cache"] == "exact"        # cached again
    assert "Rye bread" in after["bread"]["results"][0]["text"]
    assert set(_chunks(after["bread"])).isdisjoint(_chunks(before["bread"]))
    assert _search(tenant, broad)["cache"] == "none"               # held it too
    assert set(_chunks(before_broad)) & set(_chunks(before["bread"]))


async def _bread_chunks(db, tenant) -> set[str]:
    rows = await db.fetch("SELECT id FROM chunks WHERE entity_id = %(e)s AND document_id = 'bread'",
                          {"e": tenant.entity_id})
    return {str(r["id"]) for r in rows}


async def test_no_response_holds_a_deleted_chunk(stack, upload_admin, db):
    tenant = await _tenant_with_docs(stack, upload_admin)
    body = {"query": "how do I bake sourdough bread", "k": 3}
    old_chunks = await _bread_chunks(db, tenant)
    assert old_chunks and old_chunks <= set(_chunks(_search(tenant, body)))
    assert _search(tenant, body)["cache"] == "exact"

    # agents keep searching (cache on) while the document is replaced, then deleted
    seen: list[tuple[float, set[str]]] = []
    stop = threading.Event()

    def agent():
        while not stop.is_set():
            started = time.monotonic()
            seen.append((started, set(_chunks(_search(tenant, body)))))

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        put_document(tenant, "bread", "Focaccia: olive oil, flaky salt and a very wet dough baked hot.", source="wiki")
        await wait_document(tenant, "bread", version=2)
        replaced_at = time.monotonic()
        current = await _bread_chunks(db, tenant)
        deleted = old_chunks - current
        assert deleted, "the new version should have replaced the old chunk"
        await asyncio.sleep(1.0)
        status, gone = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/bread")
        assert status == 200 and gone["deleted"], gone
        deleted_at = time.monotonic()
        deleted |= current
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        thread.join()

    after_replace = [ids for started, ids in seen if started > replaced_at]
    after_delete = [ids for started, ids in seen if started > deleted_at]
    assert after_replace and after_delete
    assert any(ids & current for ids in after_replace)  # the new version was found ...
    assert not any(ids & (old_chunks - current) for ids in after_replace)  # ... never the old one
    assert not any(ids & deleted for ids in after_delete)
    final = _search(tenant, body)
    assert not set(_chunks(final)) & deleted
    assert final["results"] and all(r["document_id"] != "bread" for r in final["results"])


async def test_an_exact_hit_served_from_the_search_process_memory_sees_another_process_delete(stack, upload_admin, db):
    # The search worker keeps recent exact hits in memory (search/local_exact_cache.py); the delete runs
    # in the upload worker, another process: its sequence bump must retire the in-memory copy.
    tenant = await _tenant_with_docs(stack, upload_admin)
    body = {"query": "how do I bake sourdough bread", "k": 3}
    bread = await _bread_chunks(db, tenant)
    first = _search(tenant, body)
    assert set(_chunks(first)) & bread
    # the second answer comes from the KV and is kept in memory; the third from memory
    assert [_search(tenant, body)["cache"] for _ in range(2)] == ["exact", "exact"]
    status, gone = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/bread")
    assert status == 200 and gone["deleted"], gone
    after = _search(tenant, body)
    assert after["cache"] == "none"
    assert not set(_chunks(after)) & bread
    again = _search(tenant, body)                 # the new answer is cached (and kept) in turn
    assert again["cache"] == "exact" and _chunks(again) == _chunks(after)
