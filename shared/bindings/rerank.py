"""Optional rerank stage: a cross-encoder behind an HTTP endpoint, off unless configured.

Two wire formats, chosen by whether a model name is configured:
- TEI (text-embeddings-inference) ``POST /rerank`` ``{query, texts}`` →
  ``[{index, score}, ...]`` (no model name);
- Cohere-style (vLLM, Jina, Infinity...) ``{model, query, documents}`` →
  ``{results: [{index, relevance_score}, ...]}`` (with a model name).
Either answer shape is accepted.
"""

from __future__ import annotations

from typing import Protocol

import aiohttp

from ..errors import BindingError


class Reranker(Protocol):
    async def rerank(self, query: str, texts: list[str]) -> list[float]:
        """One relevance score per text, in the order given (higher is better)."""
        ...


class HTTPReranker:
    def __init__(self, url: str, *, model: str = "", api_key: str = "", timeout: float = 10.0) -> None:
        self.url = url
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = aiohttp.ClientTimeout(total=timeout)

    def payload(self, query: str, texts: list[str]) -> dict:
        if self.model:
            return {"model": self.model, "query": query, "documents": texts}
        return {"query": query, "texts": texts}

    @staticmethod
    def parse(body: object, count: int) -> list[float]:
        items = body.get("results") if isinstance(body, dict) else body
        if not isinstance(items, list):
            raise BindingError("reranker answered an unexpected body (expected a list or {results: [...]})")
        scores: list[float | None] = [None] * count
        for item in items:
            index = item.get("index")
            score = item.get("relevance_score", item.get("score"))
            if not isinstance(index, int) or not 0 <= index < count or not isinstance(score, int | float):
                raise BindingError(f"reranker answered a bad item: {item!r}")
            scores[index] = float(score)
        if any(s is None for s in scores):
            raise BindingError("reranker did not score every text")
        return scores  # type: ignore[return-value]

    async def rerank(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        # A session per call: reranking costs tens of milliseconds anyway, and nothing
        # is left open when the worker stops.
        try:
            async with aiohttp.ClientSession(timeout=self.timeout, headers=self.headers) as session:
                async with session.post(self.url, json=self.payload(query, texts)) as resp:
                    if resp.status >= 400:
                        raise BindingError(f"reranker {self.url} answered {resp.status}: {(await resp.text())[:300]}")
                    body = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise BindingError(f"reranker {self.url} failed: {exc}") from exc
        return self.parse(body, len(texts))

    def describe(self) -> dict:
        return {"type": "reranker", "url": self.url, "model": self.model or None}
