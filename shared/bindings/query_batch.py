"""Query embeddings of concurrent requests, run together: one model call for every query waiting.

A search embeds one short query. Alone, a model call is ~3 ms on one ONNX Runtime thread; eight
agents calling at once would queue eight such calls (each through a worker thread of its own).
Here a query that arrives while a batch is running waits for the next batch instead, and that
batch takes every query queued by then (up to ``max_batch``): no timer, so a lone query never
waits, and under load one call embeds several queries for little more than the cost of one.

Each caller gets its own vector (row ``i`` of the batch), or the batch's exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class _Waiting:
    text: str
    future: asyncio.Future


class QueryBatcher:
    """Batches ``encode(texts) -> (n, dim)`` calls of one event loop; ``encode`` runs in a thread."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], *, max_batch: int = 32) -> None:
        self._encode = encode
        self.max_batch = max_batch
        self._waiting: list[_Waiting] = []
        self._running: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0  # model calls made; with ``queries``, what tests and benchmarks read
        self.queries = 0

    async def embed(self, text: str) -> np.ndarray:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # one model shared by processes' successive loops (tests): start afresh
            self._loop, self._waiting, self._running = loop, [], None
        waiting = _Waiting(text, loop.create_future())
        self._waiting.append(waiting)
        if self._running is None or self._running.done():
            self._running = loop.create_task(self._run())
        return await waiting.future

    async def _run(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[:self.max_batch], self._waiting[self.max_batch:]
            batch = [w for w in batch if not w.future.cancelled()]  # callers that gave up
            if not batch:
                continue
            try:
                vectors = await asyncio.to_thread(self._encode, [w.text for w in batch])
            except Exception as exc:  # every caller of this batch gets the model's error
                for w in batch:
                    if not w.future.done():
                        w.future.set_exception(exc)
                continue
            except BaseException:  # the loop is going away: nobody is left hanging on a future
                for w in [*batch, *self._waiting]:
                    w.future.cancel()
                self._waiting = []
                raise
            self.batches += 1
            self.queries += len(batch)
            for w, vector in zip(batch, vectors, strict=True):
                if not w.future.done():
                    w.future.set_result(vector)
