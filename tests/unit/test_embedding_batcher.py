"""The embedding batcher: concurrent runs share model calls; a failing text fails only its own run."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from edgeindex.ingest.embedding import EmbeddingBatcher


class FakeModel:
    """Vectors [len(text), 0, ...]; a call holding a text with 'poison' raises."""

    dimension = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        await asyncio.sleep(0)
        if any("poison" in t for t in texts):
            raise ValueError("cannot embed poison")
        out = np.zeros((len(texts), self.dimension), np.float32)
        out[:, 0] = [len(t) for t in texts]
        return out


async def test_concurrent_requests_share_one_model_call_and_get_their_own_rows():
    model = FakeModel()
    batcher = EmbeddingBatcher(model, max_texts=64, linger=0.01)
    requests = [["a" * (i + 1)] * (i + 1) for i in range(5)]  # 15 texts in all
    results = await asyncio.gather(*(batcher.embed(r) for r in requests))
    assert len(model.calls) == 1 and len(model.calls[0]) == 15
    for request, vectors in zip(requests, results):
        assert vectors[:, 0].tolist() == [len(t) for t in request]


async def test_calls_are_cut_at_max_texts():
    model = FakeModel()
    batcher = EmbeddingBatcher(model, max_texts=4, linger=0.01)
    await asyncio.gather(*(batcher.embed(["x", "y"]) for _ in range(4)))
    assert [len(c) for c in model.calls] == [4, 4]


async def test_a_poison_request_fails_alone_and_the_others_get_vectors():
    model = FakeModel()
    batcher = EmbeddingBatcher(model, max_texts=64, linger=0.01)
    good = [["one"], ["three", "four"], ["five"]]
    tasks = [batcher.embed(r) for r in good[:2]] + [batcher.embed(["two poison"])] + [batcher.embed(good[2])]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[2], ValueError)
    for request, vectors in zip(good, results[:2] + results[3:]):
        assert vectors[:, 0].tolist() == [len(t) for t in request]
    assert len(model.calls[0]) == 5 and batcher.isolated == 1  # shared first, then each alone


async def test_a_wrong_number_of_vectors_is_never_handed_out():
    class Short(FakeModel):
        async def embed(self, texts):
            return (await super().embed(texts))[:-1]

    batcher = EmbeddingBatcher(Short(), linger=0.0)
    with pytest.raises(ValueError, match="vectors for"):
        await batcher.embed(["a", "b"])


async def test_a_call_waits_for_runs_on_their_way_but_a_lone_run_does_not():
    model = FakeModel()
    batcher = EmbeddingBatcher(model, max_texts=64, linger=0.0, fill=64, window=5.0)

    async def run(texts: list[str], delay: float) -> np.ndarray:
        with batcher.coming():
            await asyncio.sleep(delay)  # its extract, chunk and diff steps
            return await batcher.embed(texts)

    # The second run asks 0.2 s after the first: both still share one call.
    await asyncio.gather(run(["early"], 0.0), run(["late one"], 0.2))
    assert [len(c) for c in model.calls] == [2]
    # Alone, nobody else is coming: no wait for the window.
    started = asyncio.get_running_loop().time()
    await run(["alone"], 0.0)
    assert asyncio.get_running_loop().time() - started < 1.0 and len(model.calls) == 2
