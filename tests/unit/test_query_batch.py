"""Concurrent query embeddings share model calls (bindings/query_batch.py): every query waiting
when a call starts goes into it, each caller gets its own row, a lone query runs at once, and a
model error reaches every caller of that batch only."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from edgeindex.bindings.query_batch import QueryBatcher


class Model:
    """A stand-in model: the vector of a text is [len(text), index of the call]; the first call
    blocks until released, so the test decides what queues up behind it."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()
        self.fail_on = fail_on

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            assert self.release.wait(5)
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return np.array([[len(t), len(self.calls)] for t in texts], np.float32)


async def _until(predicate) -> None:
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_queries_that_arrive_during_a_call_share_the_next_one():
    model = Model()
    batcher = QueryBatcher(model.encode)
    first = asyncio.create_task(batcher.embed("a"))
    await _until(lambda: model.calls)  # the first call runs (and blocks) with "a" alone
    rest = [asyncio.create_task(batcher.embed(text)) for text in ("bb", "ccc", "dddd")]
    await asyncio.sleep(0.05)
    model.release.set()
    vectors = await asyncio.gather(first, *rest)
    assert model.calls == [["a"], ["bb", "ccc", "dddd"]]
    # each caller gets its own row, from the call its text went into
    assert [v.tolist() for v in vectors] == [[1, 1], [2, 2], [3, 2], [4, 2]]
    assert (batcher.batches, batcher.queries) == (2, 4)


async def test_a_lone_query_is_embedded_at_once():
    model = Model()
    model.release.set()
    batcher = QueryBatcher(model.encode)
    assert (await batcher.embed("hello")).tolist() == [5, 1]
    assert (await batcher.embed("hi")).tolist() == [2, 2]
    assert model.calls == [["hello"], ["hi"]]


async def test_batches_are_bounded():
    model = Model()
    batcher = QueryBatcher(model.encode, max_batch=2)
    first = asyncio.create_task(batcher.embed("a"))
    await _until(lambda: model.calls)
    rest = [asyncio.create_task(batcher.embed(t)) for t in ("b", "c", "d")]
    await asyncio.sleep(0.05)
    model.release.set()
    await asyncio.gather(first, *rest)
    assert model.calls == [["a"], ["b", "c"], ["d"]]


async def test_a_model_error_reaches_the_callers_of_its_batch_only():
    model = Model(fail_on="bad")
    batcher = QueryBatcher(model.encode)
    first = asyncio.create_task(batcher.embed("a"))
    await _until(lambda: model.calls)
    failing = [asyncio.create_task(batcher.embed(t)) for t in ("bad", "x")]
    await asyncio.sleep(0.05)
    model.release.set()
    assert (await first).tolist() == [1, 1]
    for task in failing:
        with pytest.raises(RuntimeError, match="model failed"):
            await task
    assert (await batcher.embed("after")).tolist() == [5, 3]  # the batcher goes on
