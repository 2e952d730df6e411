"""Chunk enrichment at ingestion: an LLM's keywords and questions for each new chunk.

Stored beside the chunk (``chunks.enrichment``, infra/migrations/0010_chunk_enrichment.sql)
and indexed in the same tsvector at weight C, which BM25 counts at ENRICHMENT_WEIGHT of a
word of the chunk itself (shared/sql/search.sql): a query phrased the way users ask finds
the chunk, but never outranks a chunk that says the words. Off unless the ingest worker's
ENRICH_CHUNKS var is set and an LLM is configured; part of the summarize step, so a replayed
run reuses what it generated.
"""

from __future__ import annotations

import asyncio
import logging

from .. import language
from ..bindings.ai import ChatModel

log = logging.getLogger(__name__)

ENRICH_PROMPT = (
    "You index a passage for search. Write up to 8 keywords or short key phrases that a person "
    "looking for this passage might type (including words it does not use itself), then up to 3 "
    "questions the passage answers. Use the passage's language. One per line, nothing else.")
MAX_INPUT_CHARS = 4000
MAX_TOKENS = 200
CONCURRENCY = 4


async def enrich_chunks(llm: ChatModel, texts: list[str], *, concurrency: int = CONCURRENCY,
                        timeout: float = 60.0) -> list[str | None]:
    """One enrichment per text (None where the model failed: the chunk is stored without one).
    Cut like the chunk's own text (shared/language.py), so the tsvector parses words."""
    gate = asyncio.Semaphore(concurrency)

    async def one(text: str) -> str | None:
        async with gate:
            try:
                answer = await asyncio.wait_for(
                    llm.complete(ENRICH_PROMPT, text[:MAX_INPUT_CHARS], max_tokens=MAX_TOKENS), timeout)
            except Exception as exc:  # noqa: BLE001 - enrichment is an extra; ingestion goes on without it
                log.warning("chunk enrichment failed: %s", exc)
                return None
        lines = [line.strip(" -*•\t") for line in answer.splitlines()]
        joined = "\n".join(line for line in lines if line)
        return language.lexical_text(joined) if joined else None

    return list(await asyncio.gather(*(one(t) for t in texts)))
