"""The search service runs the lexical statement while the query is being embedded.

The database half is replaced by stand-ins here (the real statements are covered by the
integration tests); what is checked is the orchestration: the lexical statement has started
before the embedding finishes, its result reaches the response, and a failure on either side
surfaces as the request's error without leaving a task behind.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from edgeindex.bindings.kv import DiskKV
from edgeindex.env import ExecutionContext
from edgeindex.errors import BindingError
from edgeindex.search import engine
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import Principal

USER = Principal("k1", False, frozenset({"e1"}))
SETTINGS = SearchSettings(max_k=100, max_query_chars=2000, semantic_threshold=0.95, cache_ttl=60.0)


def service(kv: DiskKV, embedder) -> SearchService:
    # The database and the semantic cache are never reached: the engine is replaced below, cache is off.
    return SearchService(db=object(), kv=kv, embedder=embedder, semantic_cache=object(), settings=SETTINGS)


class Embedder:
    """Finishes only once the lexical statement is running (or fails, if asked to)."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, lexical_started: asyncio.Event, error: Exception | None = None) -> None:
        self.lexical_started = lexical_started
        self.error = error

    async def embed_query(self, text: str) -> np.ndarray:
        await asyncio.wait_for(self.lexical_started.wait(), timeout=5)
        if self.error:
            raise self.error
        return np.ones(384, np.float32) / np.sqrt(384)


@pytest.fixture
def kv(tmp_path):
    store = DiskKV(tmp_path / "kv", namespace="test")
    yield store
    store.close()


def _patch_engine(monkeypatch, started: asyncio.Event, *, lexical_error: Exception | None = None):
    calls = {}

    async def lexical(db, request, entity_ids, *, tuned, limit=None, probe=0):
        started.set()
        await asyncio.sleep(0.01)
        if lexical_error:
            raise lexical_error
        return engine.LexicalResult(nonempty=True, exact=True, corrections={"autovacum": ["autovacuum"]})

    async def retrieve(db, request, entity_ids, embedding, *, model_id, tuned, lexical_result=None, limit=None,
                       include_text=None):
        calls["lexical_result"] = lexical_result
        calls["embedding"] = embedding
        return []

    monkeypatch.setattr(engine, "lexical", lexical)
    monkeypatch.setattr(engine, "retrieve", retrieve)
    return calls


async def test_lexical_runs_while_the_query_is_embedded(monkeypatch, kv):
    started = asyncio.Event()
    calls = _patch_engine(monkeypatch, started)
    ctx = ExecutionContext()
    answer = await service(kv, Embedder(started)).search(USER, {"query": "autovacum", "cache": False}, background=ctx)
    await ctx.drain()
    # the embedder waits for the lexical statement to start: a sequential search would time out
    assert answer["corrections"] == {"autovacum": ["autovacuum"]}
    assert calls["lexical_result"].exact and calls["embedding"].shape == (384,)
    assert set(answer["timings"]) == {"embed_ms", "lexical_ms", "hybrid_ms"}


async def test_an_embedding_failure_is_the_error_and_leaves_no_task(monkeypatch, kv):
    started = asyncio.Event()
    _patch_engine(monkeypatch, started)
    ctx = ExecutionContext()
    with pytest.raises(BindingError, match="model down"):
        await service(kv, Embedder(started, BindingError("model down"))).search(
            USER, {"query": "autovacum", "cache": False}, background=ctx)
    await ctx.drain()  # the lexical statement was left to finish, off the request path
    assert not ctx._tasks


async def test_a_lexical_failure_is_the_error(monkeypatch, kv):
    started = asyncio.Event()
    _patch_engine(monkeypatch, started, lexical_error=BindingError("search query failed: boom"))
    ctx = ExecutionContext()
    with pytest.raises(BindingError, match="boom"):
        await service(kv, Embedder(started)).search(USER, {"query": "autovacum", "cache": False}, background=ctx)
    await ctx.drain()
    assert not ctx._tasks
