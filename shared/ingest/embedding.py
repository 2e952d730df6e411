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

log = logging.getLogger(__name__)


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

    def __init__(self, embedder, *, max_texts: int = 256, linger: float = 0.02) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self.linger = linger
        self._queue: list[_Request] = []
        self._worker: asyncio.Task | None = None
        self.calls = 0      # model calls made (telemetry)
        self.texts = 0

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
            try:
                vectors = await self.embedder.embed([t for r in taken for t in r.texts])
            except Exception as exc:
                for request in taken:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            self.calls += 1
            self.texts += size
            offset = 0
            for request in taken:
                n = len(request.texts)
                if not request.future.done():
                    request.future.set_result(vectors[offset:offset + n])
                offset += n
