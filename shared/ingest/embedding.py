"""Embedding for ingestion: requests from concurrent runs share model calls.

A queue batch runs one workflow per document at the same time. Each run asks
for the vectors of its own changed chunks; one model call per run would waste
the model on tiny batches (a short document is one chunk). ``EmbeddingBatcher``
collects the requests that arrive while the model is busy (or within a short
linger) and embeds them in one call, then hands every run its own rows.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import numpy as np

from . import faults

log = logging.getLogger(__name__)


# Texts per model call (the model itself runs them in batches of services.ai.batch_size, sorted by
# length): big enough that concurrent runs' chunks share calls, small enough that a run is not held
# up for long. scripts/bench_ingest.py embeds its raw pass in calls of the same size.
MODEL_CALL_TEXTS = 256


def encode_vectors(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype="<f4").tobytes()


def decode_vectors(data: bytes, dimension: int) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4").reshape(-1, dimension)


@dataclass
class _Request:
    texts: list[str]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class EmbeddingBatcher:
    """Coalesces concurrent ``embed`` calls into model calls of up to ``max_texts`` texts."""

    def stats(self) -> dict:
        return {"calls": self.calls, "texts": self.texts, "isolated": self.isolated, "max_texts": self.max_texts,
                "linger_ms": round(self.linger * 1000, 1),
                "mean_texts_per_call": round(self.texts / self.calls, 1) if self.calls else None}

    def __init__(self, embedder, *, max_texts: int = MODEL_CALL_TEXTS, linger: float = 0.02) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self.linger = linger
        self._queue: list[_Request] = []
        self._worker: asyncio.Task | None = None
        self.calls = 0      # model calls made (telemetry)
        self.texts = 0
        self.isolated = 0   # shared calls that failed and were split per request

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dimension), np.float32)
        request = _Request(list(texts))
        self._queue.append(request)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await request.future

    async def _drain(self) -> None:
        await asyncio.sleep(self.linger)  # let runs of the same queue batch catch up
        while self._queue:
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
            vectors = await self.embedder.embed(texts)
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
