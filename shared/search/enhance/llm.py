"""The LLM half of query enhancement: OR-synonyms and HyDE, each within a time budget and cached.

Any OpenAI-compatible chat model (the AI binding's ``llm``, the one summaries use). An answer
is cached in KV under a digest of (model, prompt, query): the same query never asks twice,
whatever process asks. A call that outlives the budget, or fails, leaves the query as it was:
enhancement is an improvement, never a reason for a search to fail or stall.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from dataclasses import dataclass

from ...bindings.ai import ChatModel
from ...bindings.kv import KV
from . import defaults

log = logging.getLogger(__name__)

SYNONYMS_PROMPT = (
    "You expand search queries for a full-text index. For the query you are given, list other "
    "words and short phrases a relevant document might use instead of the query's words: synonyms, "
    "spelled-out abbreviations, related terms. Write them in the query's language, one per line, "
    f"at most {defaults.SYNONYMS_MAX} lines, nothing else.")
HYDE_PROMPT = (
    "Write one short passage, as it could appear in a document, that answers the question or "
    "matches the search query you are given. Write in the query's language. Only the passage.")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class LLMAnswer:
    text: str | None
    outcome: str   # "llm", "cache", "timeout", "error"
    ms: float = 0.0


class LLMEnhancer:
    def __init__(self, llm: ChatModel, kv: KV, *, budget: float = defaults.LLM_BUDGET_SECONDS,
                 ttl: float = defaults.LLM_CACHE_TTL) -> None:
        self.llm = llm
        self.kv = kv
        self.budget = budget
        self.ttl = ttl

    @property
    def model_id(self) -> str:
        return getattr(self.llm, "model_id", "") or type(self.llm).__name__

    def cache_key(self, prompt: str, query: str, max_tokens: int) -> str:
        digest = hashlib.sha256(json.dumps([self.model_id, prompt, query, max_tokens]).encode()).hexdigest()
        return f"enhance:llm:{digest}"

    async def ask(self, prompt: str, query: str, *, max_tokens: int) -> LLMAnswer:
        key = self.cache_key(prompt, query, max_tokens)
        cached = await asyncio.to_thread(self.kv.get, key)
        if cached is not None:
            return LLMAnswer(cached, "cache")
        loop = asyncio.get_running_loop()
        mark = loop.time()
        try:
            text = await asyncio.wait_for(self.llm.complete(prompt, query, max_tokens=max_tokens), self.budget)
        except TimeoutError:
            return LLMAnswer(None, "timeout", round((loop.time() - mark) * 1000, 2))
        except Exception as exc:  # noqa: BLE001 - any failure of the model leaves the plain query
            log.warning("query enhancement: LLM call failed: %s", exc)
            return LLMAnswer(None, "error", round((loop.time() - mark) * 1000, 2))
        await asyncio.to_thread(self.kv.put, key, text, ttl=self.ttl)
        return LLMAnswer(text, "llm", round((loop.time() - mark) * 1000, 2))

    async def synonyms(self, query: str) -> tuple[list[str], LLMAnswer]:
        answer = await self.ask(SYNONYMS_PROMPT, query, max_tokens=120)
        return parse_synonyms(answer.text or ""), answer

    async def hypothetical(self, query: str) -> LLMAnswer:
        return await self.ask(HYDE_PROMPT, query, max_tokens=defaults.HYDE_MAX_TOKENS)


def parse_synonyms(text: str) -> list[str]:
    """Lines (or commas) of an answer, bullets and numbering dropped, at most SYNONYMS_MAX."""
    items: list[str] = []
    for line in text.splitlines():
        for part in line.split(","):
            item = _BULLET.sub("", part).strip().strip('"').strip()
            if item and item.casefold() not in (i.casefold() for i in items):
                items.append(item)
    return items[:defaults.SYNONYMS_MAX]
