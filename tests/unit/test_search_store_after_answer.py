"""An uncached answer goes out before its exact-cache store is written (service.store), and the
same request coming again meanwhile waits for that store and is an exact hit, as it was when the
answer waited for the store.

The KV and its store thread are real (DiskKV, cache.StoreWriter); the store's transaction is held
back by an event, the search statement is a stand-in (the statements are covered by the
integration tests).
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from edgeindex import cache
from edgeindex.bindings.kv import DiskKV
from edgeindex.env import ExecutionContext
from edgeindex.search import engine
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import Principal

USER = Principal("k1", False, frozenset({"e1"}))
SETTINGS = SearchSettings(max_k=100, max_query_chars=2000, semantic_threshold=0.95, cache_ttl=60.0)
ROW = {"chunk_id": "c1", "document_id": "d1", "entity_id": "e1", "position": 0, "start_char": 0, "end_char": 5,
       "score": 0.5, "vector": 0.5, "text": 0.5, "trigram": 0.0, "title": "t", "source": "s", "tags": [],
       "content": "hello"}


class Embedder:
    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    async def embed_query(self, text: str) -> np.ndarray:
        return np.ones(384, np.float32) / np.sqrt(384)


class NoSemanticHits:
    index_name = "query-cache"

    async def query(self, vector, *, namespace, top_k, min_score):
        return []


@pytest.fixture
def kv(tmp_path):
    store = DiskKV(tmp_path / "kv", namespace="test")
    yield store
    store.close()


async def test_the_answer_goes_before_its_store_and_a_repeat_waits_for_the_store(monkeypatch, kv):
    release = threading.Event()
    store_many = cache.store_many

    def held_back(kv_, entries):  # on the store thread
        assert release.wait(timeout=60)
        return store_many(kv_, entries)

    searches = []

    async def search(db, request, entity_ids, embedding, *, model_id, tuned, limit=None, include_text=None):
        searches.append(request.query)
        return engine.LexicalResult(nonempty=True, exact=True), [dict(ROW)]

    monkeypatch.setattr(cache, "store_many", held_back)
    monkeypatch.setattr(engine, "search", search)
    service = SearchService(db=object(), kv=kv, embedder=Embedder(), semantic_cache=NoSemanticHits(),
                            settings=SETTINGS)

    async def no_pointer(ctx, ttl):  # the semantic pointer's group write needs the database
        return None

    monkeypatch.setattr(service, "_remember", no_pointer)
    ctx = ExecutionContext()
    body = {"query": "autovacuum settings", "k": 3}
    try:
        # answered while its store is held back (a store awaited first would never let it return)
        first = await asyncio.wait_for(service.search(USER, body, background=ctx), timeout=60)
        assert first["cache"] == "none" and [r["chunk_id"] for r in first["results"]] == ["c1"]
        assert not release.is_set()
        repeat = asyncio.ensure_future(service.search(USER, body, background=ctx))
        for _ in range(20):  # loop steps only: the repeat reaches its exact-cache lookup
            await asyncio.sleep(0)
        assert not repeat.done()
        release.set()
        second = await asyncio.wait_for(repeat, timeout=60)
    finally:
        release.set()
        await ctx.drain()
    assert second["cache"] == "exact" and second["results"] == first["results"]
    assert searches == ["autovacuum settings"]  # the repeat ran no search statement
    assert service.stores.entries == 1


class EightBitEmbedder(Embedder):
    query_vectors = "packed-8bit"   # as LocalEmbedder.query_vectors names an 8-bit query graph


class OtherModelEmbedder(Embedder):
    model_id = "intfloat/multilingual-e5-small"   # a process that followed a model cutover


@pytest.mark.parametrize("other", [EightBitEmbedder, OtherModelEmbedder])
async def test_an_answer_made_with_other_query_weights_or_another_model_is_not_served(monkeypatch, kv, other):
    # two processes on one KV, one embedding queries on fp32 weights of one model and one on 8-bit
    # weights (bindings/query_weights.py) or on another model
    searches = []

    async def search(db, request, entity_ids, embedding, *, model_id, tuned, limit=None, include_text=None):
        searches.append(request.query)
        return engine.LexicalResult(nonempty=True, exact=True), [dict(ROW)]

    async def no_pointer(ctx, ttl):
        return None

    monkeypatch.setattr(engine, "search", search)
    services = {}
    for name, embedder in (("fp32", Embedder()), ("8bit", other())):
        services[name] = SearchService(db=object(), kv=kv, embedder=embedder, semantic_cache=NoSemanticHits(),
                                       settings=SETTINGS)
        services[name].prepare()
        monkeypatch.setattr(services[name], "_remember", no_pointer)
    body = {"query": "autovacuum settings", "k": 3}
    outcomes = []
    for name in ("fp32", "8bit", "fp32", "8bit"):
        ctx = ExecutionContext()
        try:
            outcomes.append((await services[name].search(USER, body, background=ctx))["cache"])
        finally:
            await ctx.drain()   # the store is written before the next search
    assert outcomes == ["none", "none", "exact", "exact"]
    assert len(searches) == 2
