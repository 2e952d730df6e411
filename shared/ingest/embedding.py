"""Embedding for ingestion: requests from concurrent runs share model calls.

A queue batch runs one workflow per document at the same time. Each run asks
for the vectors of its own changed chunks; one model call per run would waste
the model on tiny batches (a short document is one chunk). ``EmbeddingBatcher``
collects the requests that arrive while the model is busy (or within a short
linger) and embeds them in one call, then hands every run its own rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .. import faults

log = logging.getLogger(__name__)


# Texts per model call (the model itself runs them in batches of services.ai.batch_size, sorted by
# length): big enough that concurrent runs' chunks share calls, small enough that a run is not held
# up for long. scripts/bench_ingest.py embeds its raw pass in calls of the same size.
MODEL_CALL_TEXTS = 256
# Texts a call waits for while other runs are on their way. Not more: with every run of the process
# in one call, the model idles while they all do their other steps together (lockstep); with about
# half of them, one half prepares while the other is embedded. One model thread (MODEL_THREADS)
# costs about the same per text in calls of 8 as of 256, so small calls lose little.
CALL_FILL = 16


def encode_vectors(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype="<f4").tobytes()


def decode_vectors(data: bytes, dimension: int) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4").reshape(-1, dimension)


# The run (asyncio task) asking: set by EmbeddingBatcher.coming, read when it embeds.
_RUN_TOKEN: contextvars.ContextVar[dict | None] = contextvars.ContextVar("embedding_run", default=None)


@dataclass
class _Request:
    texts: list[str]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class EmbeddingBatcher:
    """Coalesces concurrent ``embed`` calls into model calls of up to ``max_texts`` texts.

    A call starts once the model is free and either ``fill`` texts are waiting, or no run that
    said it is coming (``coming``) is still on its way, or ``window`` seconds passed since the
    oldest waiting request. Runs of a queue batch reach the embed step spread out by their
    database and bucket round trips; without the wait the model would start on the first few and
    embed the rest a handful at a time, where it is least efficient. A lone run never waits for
    anyone: nobody else is coming."""

    def stats(self) -> dict:
        return {"calls": self.calls, "texts": self.texts, "isolated": self.isolated, "max_texts": self.max_texts,
                "fill": self.fill, "window_ms": round(self.window * 1000, 1),
                "linger_ms": round(self.linger * 1000, 1),
                "mean_texts_per_call": round(self.texts / self.calls, 1) if self.calls else None,
                # where the model's wall time went: in calls, waiting for a call to fill, and idle
                # (nothing queued) between the first call and the last
                "model_busy_s": round(self.busy, 2), "gathering_s": round(self.gathering, 2),
                "span_s": round(self._last_end - self._first_start, 2) if self.calls else 0.0,
                "model_cpu_s": round(getattr(self.embedder, "cpu_seconds", 0.0), 2),
                "model_runqueue_s": round(getattr(self.embedder, "runqueue_seconds", 0.0), 2)}

    def __init__(self, embedder, *, max_texts: int = MODEL_CALL_TEXTS, linger: float = 0.02,
                 fill: int | None = None, window: float = 0.5) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self.linger = linger
        self.fill = min(max_texts, fill or getattr(embedder, "batch_size", None) or max_texts)
        self.window = window
        self._queue: list[_Request] = []
        self._worker: asyncio.Task | None = None
        self._coming = 0                 # runs that said they will embed and have not asked yet
        self._changed = asyncio.Event()  # a request queued or a run no longer coming
        self.calls = 0      # model calls made (telemetry)
        self.texts = 0
        self.isolated = 0   # shared calls that failed and were split per request
        self.busy = 0.0       # seconds in model calls (telemetry: how well the model is fed)
        self.gathering = 0.0  # seconds waiting for a call to fill
        self._first_start = 0.0
        self._last_end = 0.0

    @contextlib.contextmanager
    def coming(self):
        """Held around a run, in its task: it counts as on its way to ``embed`` until it asks for
        vectors, says it will not (``arrived``), or ends."""
        token = {"here": False}
        self._coming += 1
        reset = _RUN_TOKEN.set(token)
        try:
            yield token
        finally:
            _RUN_TOKEN.reset(reset)
            self._arrive(token)

    def arrived(self) -> None:
        """The current run will not ask (again): a replayed embed step, unchanged bytes."""
        self._arrive(_RUN_TOKEN.get())

    def _arrive(self, token: dict | None) -> None:
        if token is not None and not token["here"]:
            token["here"] = True
            self._coming -= 1
            self._changed.set()

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.arrived()
        if not texts:
            return np.zeros((0, self.embedder.dimension), np.float32)
        request = _Request(list(texts))
        self._queue.append(request)
        self._changed.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await request.future

    async def _gather(self) -> None:
        """Wait until a call is worth starting: ``fill`` texts, nobody else coming, or the window."""
        deadline = asyncio.get_running_loop().time() + self.window
        while self._coming > 0 and sum(len(r.texts) for r in self._queue) < self.fill:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return

    async def _drain(self) -> None:
        await asyncio.sleep(self.linger)  # let runs of the same queue batch catch up
        while self._queue:
            loop = asyncio.get_running_loop()
            waited = loop.time()
            await self._gather()
            self.gathering += loop.time() - waited
            taken: list[_Request] = []
            size = 0
            while self._queue and (not taken or size + len(self._queue[0].texts) <= self.max_texts):
                request = self._queue.pop(0)
                taken.append(request)
                size += len(request.texts)
            await self._embed_shared(taken)

    async def _embed_shared(self, taken: list[_Request]) -> None:
        """One model call for every request taken. If it fails and several documents shared it, each
        request is embedded alone: one poison document fails (and retries) on its own, its
        neighbours in the batch still get their vectors."""
        try:
            texts = [t for r in taken for t in r.texts]
            faults.poison(texts)
            began = time.perf_counter()
            vectors = await self.embedder.embed(texts)
            ended = time.perf_counter()
            self.busy += ended - began
            self._first_start = self._first_start or began
            self._last_end = ended
        except Exception as exc:
            if len(taken) > 1:
                self.isolated += 1
                log.warning("a shared embedding call of %d requests failed (%s); embedding each alone",
                            len(taken), exc)
                for request in taken:
                    await self._embed_shared([request])
                return
            for request in taken:
                if not request.future.done():
                    request.future.set_exception(exc)
            return
        if vectors.shape[0] != sum(len(r.texts) for r in taken):
            # Never hand a run rows that belong to another: the shapes must add up.
            error = ValueError(f"embedder returned {vectors.shape[0]} vectors for "
                               f"{sum(len(r.texts) for r in taken)} texts")
            for request in taken:
                if not request.future.done():
                    request.future.set_exception(error)
            return
        self.calls += 1
        self.texts += vectors.shape[0]
        offset = 0
        for request in taken:
            n = len(request.texts)
            if not request.future.done():
                request.future.set_result(vectors[offset:offset + n])
            offset += n
