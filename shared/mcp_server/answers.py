"""What the MCP ``search``, ``expand``, ``trajectory`` and ``select_tools`` tools answer: what a model
reads, not the HTTP route's whole answer. A search answers ids, titles, scores, snippets and
citations (the ``structuredContent`` of the call, under ``SearchAnswer``'s schema), and in a
trajectory the step's novelty, tokens and what was left out; the routing, timings and cache
diagnostics come only with ``diagnostics: true``. An expansion answers results of the same shape; a
grounding, snippets of its chunks. A selection drops its timings, catalogue state and per-tool score
breakdowns unless asked."""

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
    version: int | None = None   # as_of: the document's version then


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
    seen: bool | None = None                       # in a trajectory step with seen: mark


class TrajectoryStep(_Answer):
    """A trajectory step's account: novelty is the share of new chunks and documents among what a plain
    search would answer (0: the agent has it all), tokens those of this step's text and the total."""

    id: str
    step: int
    novelty: dict[str, float]
    tokens: dict[str, int]
    left_out: int


class SearchAnswer(_Answer):
    search_id: str | None = None                   # what feedback names
    count: int
    results: list[CompactResult]
    corrections: dict[str, list[str]] | None = None
    trajectory: TrajectoryStep | None = None       # when the search named one
    diagnostics: dict[str, Any] | None = None      # routing, timings, cache, enhancement: when asked


def _snippet(text: str) -> tuple[str, bool]:
    if len(text) <= SNIPPET_CHARS:
        return text, False
    return shorten(text, SNIPPET_CHARS), True


def _result(r: dict, *, diagnostics: bool) -> CompactResult:
    document = r.get("document") or {}
    snippet, truncated = _snippet(r.get("text") or "")
    return CompactResult(
        chunk_id=str(r["chunk_id"]), document_id=r["document_id"], entity_id=r["entity_id"],
        title=document.get("title"), score=r["score"], snippet=snippet, truncated=truncated,
        citation=Citation(source=document.get("source"), position=r["position"],
                          start_char=r.get("start_char"), end_char=r.get("end_char"), version=r.get("version")),
        summary=document.get("summary"), neighbours=r.get("neighbours"),
        scores=r.get("scores") if diagnostics else None, seen=r.get("seen"))


def _step(step: dict) -> TrajectoryStep:
    """The step's account; the trajectory's totals of chunks and documents are the ``trajectory`` tool's."""
    return TrajectoryStep(id=step["id"], step=step["step"], novelty=step["novelty"], tokens=step["tokens"],
                          left_out=step["left_out"])


def compact_search(full: dict, *, diagnostics: bool) -> dict:
    results = [_result(r, diagnostics=diagnostics) for r in full.get("results", [])]
    kept = {"results", "count", "search_id", "corrections", "trajectory"}
    step = full.get("trajectory")
    answer = SearchAnswer(search_id=full.get("search_id"), count=len(results), results=results,
                          corrections=full.get("corrections") or None,
                          trajectory=_step(step) if step is not None else None,
                          diagnostics={k: v for k, v in full.items() if k not in kept} if diagnostics else None)
    return answer.model_dump(mode="json", exclude_none=True)


def compact_expansion(full: dict) -> dict:
    """An expansion's results shaped as a search's, and the step's account."""
    return {"count": len(full["results"]),
            "results": [_result(r, diagnostics=False).model_dump(mode="json", exclude_none=True)
                        for r in full["results"]],
            "trajectory": _step(full["trajectory"]).model_dump(mode="json")}


_GROUNDING_CHUNK = ("chunk_id", "entity_id", "document_id", "position", "step", "current")


def compact_grounding(full: dict) -> dict:
    """Documents with their titles, sources and summaries; chunks as snippets, which ``get_chunk`` reads
    whole (the agent had their text when they were returned). A chunk or document deleted since is
    ``current: false``, with no text."""
    documents = [{k: v for k, v in d.items() if k not in ("status", "updated_at") and v is not None}
                 for d in full["documents"]]
    chunks = []
    for c in full["chunks"]:
        chunk = {k: c[k] for k in _GROUNDING_CHUNK}
        if c["text"] is not None:
            chunk["snippet"], chunk["truncated"] = _snippet(c["text"])
        chunks.append(chunk)
    return {"id": full["id"], "steps": full["steps"], "tokens": full["tokens"], "queries": full["queries"],
            "documents": documents, "chunks": chunks}


_SELECTION_DIAGNOSTICS = ("timings", "catalogue", "model_id", "threshold", "took_ms")
_TOOL_DIAGNOSTICS = ("scores", "matched_terms", "tokens")


def compact_selection(full: dict, *, diagnostics: bool) -> dict:
    if diagnostics:
        return full
    tools = [{k: v for k, v in t.items() if k not in _TOOL_DIAGNOSTICS} for t in full.get("tools", [])]
    return {**{k: v for k, v in full.items() if k not in _SELECTION_DIAGNOSTICS}, "tools": tools}
