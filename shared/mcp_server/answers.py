"""What the MCP ``search`` and ``select_tools`` tools answer: what a model reads, not the HTTP
route's whole answer. A search answers ids, titles, scores, snippets and citations (the
``structuredContent`` of the call, under ``SEARCH_OUTPUT_SCHEMA``); the routing, timings and cache
diagnostics come only with ``diagnostics: true``. A selection drops its timings, catalogue state and
per-tool score breakdowns the same way."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..shorten import shorten

# A chunk is ~1,000 characters; a model reads the first few hundred to judge a hit and calls
# get_chunk (or get_document) for the rest.
SNIPPET_CHARS = 300


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Citation(_Answer):
    """Where the snippet is (in the result's document): its source, the chunk's place and character span."""

    source: str | None = None
    position: int
    start_char: int | None = None
    end_char: int | None = None


class CompactResult(_Answer):
    chunk_id: str
    document_id: str
    entity_id: str
    title: str | None = None
    score: float
    snippet: str
    truncated: bool
    citation: Citation
    summary: str | None = None                     # with include.summary
    neighbours: list[dict[str, Any]] | None = None  # with include.neighbours
    scores: dict[str, Any] | None = None           # with diagnostics


class SearchAnswer(_Answer):
    search_id: str | None = None                   # what feedback names
    count: int
    results: list[CompactResult]
    corrections: dict[str, list[str]] | None = None
    diagnostics: dict[str, Any] | None = None      # routing, timings, cache, enhancement: when asked


def _snippet(text: str) -> tuple[str, bool]:
    if len(text) <= SNIPPET_CHARS:
        return text, False
    return shorten(text, SNIPPET_CHARS), True


def compact_search(full: dict, *, diagnostics: bool) -> dict:
    results = []
    for r in full.get("results", []):
        document = r.get("document") or {}
        snippet, truncated = _snippet(r.get("text") or "")
        results.append(CompactResult(
            chunk_id=str(r["chunk_id"]), document_id=r["document_id"], entity_id=r["entity_id"],
            title=document.get("title"), score=r["score"], snippet=snippet, truncated=truncated,
            citation=Citation(source=document.get("source"), position=r["position"],
                              start_char=r.get("start_char"), end_char=r.get("end_char")),
            summary=document.get("summary"), neighbours=r.get("neighbours"),
            scores=r.get("scores") if diagnostics else None))
    kept = {"results", "count", "search_id", "corrections"}
    answer = SearchAnswer(search_id=full.get("search_id"), count=len(results), results=results,
                          corrections=full.get("corrections") or None,
                          diagnostics={k: v for k, v in full.items() if k not in kept} if diagnostics else None)
    return answer.model_dump(mode="json", exclude_none=True)


_SELECTION_DIAGNOSTICS = ("timings", "catalogue", "model_id", "threshold", "took_ms")
_TOOL_DIAGNOSTICS = ("scores", "matched_terms", "tokens")


def compact_selection(full: dict, *, diagnostics: bool) -> dict:
    if diagnostics:
        return full
    tools = [{k: v for k, v in t.items() if k not in _TOOL_DIAGNOSTICS} for t in full.get("tools", [])]
    return {**{k: v for k, v in full.items() if k not in _SELECTION_DIAGNOSTICS}, "tools": tools}
