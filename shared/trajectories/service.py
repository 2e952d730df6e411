"""A search step in a trajectory, and what a trajectory has touched (its grounding).

A step runs the ordinary search (``SearchService``: its caches, router and filters) for more than
k results, then leaves out what the trajectory has seen (``state.take_step``). The caches store
the search's answer, never the trajectory's view of it, so a cached answer serves any trajectory
and is filtered by each.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from .. import copies, sqlfiles
from ..bindings.database import Database
from ..errors import NotFound, ValidationError
from ..search import engine
from ..search.request import MAX_LIST, Include, SearchRequest, _Strict, parse_request
from ..search.service import SearchContext, SearchService
from ..tenancy import Principal
from ..token_count import count_tokens
from ..validation import EntityId, parse
from . import state
from .store import TrajectoryStore

SQL = sqlfiles.load("trajectories.sql")
TRAJECTORY_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
MAX_EXCLUDED = MAX_LIST   # chunk ids a filter may leave out
# a step whose first 2k candidates leave its answer short asks for 2k more, up to this many times
# (each time with every candidate looked at left out by the database, so each batch is new)
DEEPER_ROUNDS = 3
TrajectoryId = Field(pattern=TRAJECTORY_ID, description="a trajectory's id: created on first use "
                                                        "(1-128 letters, digits or _ . : -)")


class TrajectoryFields(_Strict):
    trajectory: str = TrajectoryId
    seen: state.SeenMode = "exclude"


class TrajectorySearchRequest(SearchRequest):
    """``POST /search`` with its trajectory fields (what the OpenAPI document shows)."""

    trajectory: str | None = Field(None, pattern=TRAJECTORY_ID, description=(
        "the trajectory this search is a step of: chunks it returned before, and copies of them, are left "
        "out (seen: exclude), returned (include) or returned marked (mark); the answer reports novelty"))
    seen: Literal["exclude", "include", "mark"] = "exclude"


class ExpandRequest(_Strict):
    chunk_id: UUID = Field(strict=False, description="a chunk this trajectory returned")
    mode: Literal["neighbours", "document", "similar"] = Field(
        "neighbours", description="neighbours: the chunks around it; document: the rest of its document in "
                                  "reading order; similar: the chunks nearest it in meaning")
    k: int = Field(5, ge=1, le=100)
    entity_ids: list[EntityId] | None = Field(None, min_length=1, max_length=100, description=(
        "similar: the entities to look in (default: those the trajectory's chunks come from)"))
    include: Include = Include()


class CreateTrajectory(_Strict):
    id: str | None = Field(None, pattern=TRAJECTORY_ID, description="the id to use (default: a new random one)")


class TrajectoryService:
    def __init__(self, *, search: SearchService, db: Database, store: TrajectoryStore) -> None:
        self.search = search
        self.db = db
        self.store = store

    def create(self, principal: Principal, body: dict) -> dict:
        request = parse(CreateTrajectory, body)
        trajectory = self.store.create(principal, request.id)
        return {**trajectory.describe(), "ttl_seconds": self.store.limits.ttl}

    def delete(self, principal: Principal, trajectory_id: str) -> dict:
        self.store.delete(principal, trajectory_id)
        return {"id": trajectory_id, "deleted": True}

    async def step(self, principal: Principal, body: dict, *, background: Any) -> dict:
        body = dict(body)
        fields = parse(TrajectoryFields, {name: body.pop(name) for name in ("trajectory", "seen") if name in body})
        max_k = self.search.settings.max_k
        request = parse_request(body, max_k=max_k, max_query_chars=self.search.settings.max_query_chars)
        # a KV read on the loop, as the search's own sequence reads (bindings/kv.py: it never waits for a writer)
        trajectory = self.store.open(principal, fields.trajectory)
        # exclude: the plain answer (novelty is measured on it) and as many again for what it repeats;
        # when more than that was seen, _deeper asks past it
        limit = min(max_k, 2 * request.k) if fields.seen == "exclude" else request.k
        answer, context = await self._search(principal, body, limit, background)
        candidates = self._candidates(answer["results"], context.rows, request)
        taken = state.take_step(trajectory, candidates, k=request.k, seen=fields.seen)
        if fields.seen == "exclude" and len(taken.answered) < request.k and len(candidates) == limit:
            # the search had more than it returned: ask it for more, what the trajectory has left out
            taken = await self._deeper(principal, body, request, trajectory, taken, candidates, context, background)
        tokens = sum(c.tokens for c in taken.answered)
        recorded = await asyncio.to_thread(self.store.record, principal, fields.trajectory, lambda t: state.record(
            t, request.query, taken.answered, taken.novelty, tokens))
        results = [_as_asked(r, request) for r in taken.results]
        return {**answer, "results": results, "count": len(results),
                "trajectory": _step_info(recorded, fields.seen, taken, tokens)}

    async def expand(self, principal: Principal, trajectory_id: str, body: dict) -> dict:
        """Widens around a chunk the trajectory returned, never repeating what it returned."""
        request = parse(ExpandRequest, body)
        trajectory = await asyncio.to_thread(self.store.get, principal, trajectory_id)
        chosen = trajectory.chunks.get(str(request.chunk_id))
        if chosen is None or not _granted(principal, chosen.entity_id):
            raise NotFound(f"trajectory {trajectory_id!r} returned no chunk {str(request.chunk_id)!r}",
                           field="chunk_id")
        params = {"entity_id": chosen.entity_id, "chunk_id": str(request.chunk_id), "seen": list(trajectory.chunks),
                  "limit": 2 * request.k}
        if request.mode == "similar":
            entities = request.entity_ids or sorted({s.entity_id for s in trajectory.chunks.values()})
            rows = await self.db.fetch(SQL["expand_similar"], {**params, "entity_ids": principal.check(entities)})
        else:
            rows = await self.db.fetch(SQL["expand_document"], {**params, "nearest": request.mode == "neighbours"})
        candidates = [state.candidate(_expanded(r, request.include.summary),
                                      functools.partial(count_tokens, r["text"]) if request.include.text else 0)
                      for r in rows]
        taken = state.take_step(trajectory, candidates, k=request.k, seen="exclude")
        tokens = sum(c.tokens for c in taken.answered)
        label = f"expand {request.mode} {request.chunk_id}"
        recorded = await asyncio.to_thread(self.store.record, principal, trajectory_id, lambda t: state.record(
            t, label, taken.answered, taken.novelty, tokens))
        results = [r if request.include.text else {k: v for k, v in r.items() if k != "text"} for r in taken.results]
        return {"results": results, "count": len(results),
                "trajectory": _step_info(recorded, "exclude", taken, tokens)}

    async def grounding(self, principal: Principal, trajectory_id: str) -> dict:
        """What the trajectory touched: its documents (with their summaries), its queries, and the
        chunks it returned, with their text as stored now."""
        trajectory = await asyncio.to_thread(self.store.get, principal, trajectory_id)
        chunks = {cid: s for cid, s in trajectory.chunks.items() if _granted(principal, s.entity_id)}
        pairs = [p for p in trajectory.documents() if _granted(principal, p[0])]
        entity_ids = sorted({e for e, _ in pairs})
        documents = {(r["entity_id"], r["document_id"]): r for r in await self.db.fetch(SQL["documents"], {
            "entity_ids": [e for e, _ in pairs], "document_ids": [d for _, d in pairs]})} if pairs else {}
        texts = {r["chunk_id"]: r["text"] for r in await self.db.fetch(SQL["chunk_texts"], {
            "entity_ids": entity_ids, "chunk_ids": list(chunks)})} if chunks else {}
        return {
            **trajectory.describe(),
            "queries": [{"step": n, "query": s.query, "returned": len(s.returned), "novelty": s.novelty,
                         "tokens": s.tokens} for n, s in enumerate(trajectory.steps, 1)],
            "documents": [_document(e, d, documents.get((e, d))) for e, d in pairs],
            "chunks": [{"chunk_id": cid, "entity_id": s.entity_id, "document_id": s.document_id,
                        "position": s.position, "step": s.step, "tokens": s.tokens,
                        "text": texts.get(cid), "current": cid in texts} for cid, s in chunks.items()],
        }

    async def _search(self, principal: Principal, body: dict, limit: int,
                      background: Any) -> tuple[dict, SearchContext]:
        include = _object(body, "include")
        # the text is needed to tell copies apart; it is dropped again if the request did not ask for it
        inner = {**body, "k": limit, "include": {**include, "text": True}}
        return await self.search.search_with_context(principal, inner, background=background)

    async def _deeper(self, principal: Principal, body: dict, request: SearchRequest, trajectory: state.Trajectory,
                      taken: state.StepAnswer, candidates: list[state.Candidate], context: SearchContext,
                      background: Any) -> state.StepAnswer:
        """More candidates when the first ones were mostly seen, with the database leaving out every
        candidate already looked at and the chunks this trajectory returned most recently (up to the
        filter's limit). The first search continues (``SearchService.more``: its embedding, scope and
        blend again) for 2k at a time, up to DEEPER_ROUNDS times while the answer is short; when a cache
        answered it (or it was reranked, or as_of) the search runs once more, 2k deep."""
        filters = _object(body, "filters")
        given = list(filters.get("exclude_chunk_ids") or [])
        examined = [c.result["chunk_id"] for c in candidates]
        answered = list(taken.answered)
        limit = min(self.search.settings.max_k, 2 * request.k)
        continues = self.search.can_continue(context)
        cap = MAX_EXCLUDED - len(given)
        for _ in range(DEEPER_ROUNDS if continues else 1):
            room = max(0, cap - len(examined))
            looked_at = set(examined)
            recent = [cid for cid in trajectory.chunks if cid not in looked_at][-room:] if room else []
            excluded = (recent + examined)[-cap:] if cap > 0 else []
            if continues:
                rows = await self.search.more(context, excluded, limit)
                assert context.request is not None   # can_continue: the search ran its statements
                results = [engine.shape(r, context.request) for r in rows]
            else:
                deeper = {**body, "filters": {**filters, "exclude_chunk_ids": given + excluded}}
                answer, again = await self._search(principal, deeper, limit, background)
                results, rows = answer["results"], again.rows
            batch = self._candidates(results, rows, request)
            more = state.take_step(trajectory, batch, k=request.k - len(answered), seen="exclude")
            answered += [c for c in more.answered if all(not _same(c, a) for a in answered)]
            examined += [c.result["chunk_id"] for c in batch]
            if len(answered) >= request.k or len(results) < limit:
                break
        answered = answered[:request.k]
        return state.StepAnswer(answered, [c.result for c in answered], taken.novelty, taken.left_out)

    def _candidates(self, results: list[dict], rows: list[dict], request: SearchRequest) -> list[state.Candidate]:
        """The results as candidates, with what ingestion stored of each chunk (its statement's
        ``rows``; none when a cache answered) instead of hashing and counting its text."""
        stored = {str(r["chunk_id"]): r for r in rows if r.get("copy_fingerprint") is not None}
        return [_candidate(r, request, stored.get(r["chunk_id"])) for r in results]


def _step_info(recorded: state.Trajectory, seen: str, taken: state.StepAnswer, tokens: int) -> dict:
    return {"id": recorded.id, "step": len(recorded.steps), "seen": seen, "novelty": taken.novelty,
            "left_out": taken.left_out, "tokens": {"step": tokens, "total": recorded.tokens},
            "chunks": len(recorded.chunks), "documents": len(recorded.documents())}


def _expanded(row: dict, summary: bool) -> dict:
    """A chunk an expansion found, shaped as a search result."""
    document = {"title": row["title"], "source": row["source"], "tags": row["tags"]}
    if summary:
        document["summary"] = row["summary"]
    return {"chunk_id": row["chunk_id"], "document_id": row["document_id"], "entity_id": row["entity_id"],
            "position": row["position"], "start_char": row["start_char"], "end_char": row["end_char"],
            "score": round(float(row["score"]), 6), "document": document, "text": row["text"]}


def _object(body: dict, name: str) -> dict:
    """A nested object of the body (already validated by the search's parse)."""
    value = body.get(name)
    return value if isinstance(value, dict) else {}


def _same(a: state.Candidate, b: state.Candidate) -> bool:
    return a.result["chunk_id"] == b.result["chunk_id"] or a.fingerprint == b.fingerprint


def _candidate(result: dict, request: SearchRequest, row: dict | None) -> state.Candidate:
    if row is None:
        return state.candidate(result, lambda: _returned_tokens(result, request))
    own = row["context_tokens"]
    return state.candidate(result, lambda: _returned_tokens(result, request, own),
                           (row["copy_fingerprint"], copies.loaded(row["copy_simhash"])))


def _returned_tokens(result: dict, request: SearchRequest, own: int | None = None) -> int:
    """Tokens of the text the agent receives for this result (its neighbours' included); ``own``:
    the result's text's, as stored."""
    if not request.include.text:
        return 0
    first = count_tokens(result.get("text") or "") if own is None else own
    return first + sum(count_tokens(n.get("text") or "") for n in result.get("neighbours") or [])


def _as_asked(result: dict, request: SearchRequest) -> dict:
    if request.include.text:
        return result
    out = {k: v for k, v in result.items() if k != "text"}
    if "neighbours" in out:
        out["neighbours"] = [{k: v for k, v in n.items() if k != "text"} for n in out["neighbours"]]
    return out


def _granted(principal: Principal, entity_id: str) -> bool:
    return principal.is_admin or entity_id in principal.entity_ids


def _document(entity_id: str, document_id: str, row: dict | None) -> dict:
    if row is None:
        return {"entity_id": entity_id, "document_id": document_id, "current": False}
    return {"entity_id": entity_id, "document_id": document_id, "title": row["title"], "source": row["source"],
            "summary": row["summary"], "status": row["status"], "updated_at": row["updated_at"].isoformat(),
            "current": True}


def check_body(body: dict) -> None:
    if "trajectory" not in body and "seen" in body:
        raise ValidationError("seen applies to a trajectory: name one (trajectory)", field="seen")


