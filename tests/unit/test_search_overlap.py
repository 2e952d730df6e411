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
from edgeindex.search import engine, service
from edgeindex.tenancy import Principal

USER = Principal("k1", False, frozenset({"e1"}))
VARS = {"MAX_K": 100, "MAX_QUERY_CHARS": 2000, "CACHE_TTL_SECONDS": 60.0, "SEMANTIC_CACHE_THRESHOLD": 0.95}


class Env:
    def __init__(self, kv: DiskKV, embedder) -> None:
        self.KV = kv
        self.DB = object()
        self.AI = type("AI", (), {"embedder": embedder})()

    def var(self, name: str, cast: type = str):
        return cast(VARS[name])


class Embedder:
    """Finishes only once the lexical statement is running (or fails, if asked to)."""

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

    async def lexical(db, request, entity_ids, *, limit=None):
        started.set()
        await asyncio.sleep(0.01)
        if lexical_error:
            raise lexical_error
        return engine.LexicalResult(nonempty=True, exact=True, corrections={"autovacum": ["autovacuum"]})

    async def retrieve(db, request, entity_ids, embedding, *, lexical_result=None, limit=None, include_text=None):
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
    answer = await service.search(Env(kv, Embedder(started)), ctx, USER, {"query": "autovacum", "cache": False})
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
        await service.search(Env(kv, Embedder(started, BindingError("model down"))), ctx, USER,
                             {"query": "autovacum", "cache": False})
    await ctx.drain()  # the lexical statement was left to finish, off the request path
    assert not ctx._tasks


async def test_a_lexical_failure_is_the_error(monkeypatch, kv):
    started = asyncio.Event()
    _patch_engine(monkeypatch, started, lexical_error=BindingError("search query failed: boom"))
    ctx = ExecutionContext()
    with pytest.raises(BindingError, match="boom"):
        await service.search(Env(kv, Embedder(started)), ctx, USER, {"query": "autovacum", "cache": False})
    await ctx.drain()
    assert not ctx._tasks
