"""The query embedding of a select, started before the catalogue is read.

A select reads its catalogue (one indexed lookup of the entities' versions, ~0.6-1 ms over a
round trip to Postgres; a whole build after a registry change) and embeds the query (~7 ms on
one core for a short request, all of it in a thread outside the event loop). Neither needs the
other, so the embedding starts first and the catalogue is read while the model runs: the
request waits for the longer of the two instead of their sum. The vectors are the same.

``embed_ms`` stays the embedding's own duration, from its start: with the overlap a request's
stage timings add up to more than its ``took_ms``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


def start_timed(awaitable: Awaitable[T], timings: dict[str, float], name: str) -> asyncio.Future[T]:
    """``awaitable`` running from now on; its own duration goes to ``timings[name]`` (ms) when it ends."""
    async def timed() -> T:
        mark = time.perf_counter()
        try:
            return await awaitable
        finally:
            timings[name] = round((time.perf_counter() - mark) * 1000, 2)

    return asyncio.ensure_future(timed())


def abandon(task: asyncio.Future) -> None:
    """The select answered (an empty registry) or failed without the task's result: stop waiting for it.

    Cancelling leaves nothing to log: a model call already in its thread finishes there, and a query
    still queued in the query batcher is dropped before its batch runs (bindings/query_batch.py). A task
    that had already failed has its exception read here, so asyncio does not report it as never retrieved.
    """
    if not task.done():
        task.cancel()
    elif not task.cancelled():
        task.exception()


class Overlap(Generic[T]):
    """What ``overlapped`` yields: ``await overlap.result()`` once the block needs the value."""

    def __init__(self, task: asyncio.Future[T] | None) -> None:
        self._task = task
        self.taken = task is None

    async def result(self) -> T | None:
        if self._task is None:
            return None
        try:
            return await self._task
        finally:
            self.taken = True


@asynccontextmanager
async def overlapped(awaitable: Awaitable[T] | None, timings: dict[str, float] | None = None,
                     name: str = "embed_ms") -> AsyncIterator[Overlap[T]]:
    """``awaitable`` started before the block (timed into ``timings[name]`` when given), which reads what it
    needs meanwhile and takes the value with ``await overlap.result()``. A block that ends without taking it
    (it raised, or answered without it: an empty registry) abandons it. ``None``: nothing to start (the
    caller has the value already); ``result()`` is then ``None``."""
    if awaitable is None:
        task = None
    elif timings is not None:
        task = start_timed(awaitable, timings, name)
    else:
        task = asyncio.ensure_future(awaitable)
    overlap = Overlap(task)
    try:
        yield overlap
    finally:
        if not overlap.taken and task is not None:
            abandon(task)
