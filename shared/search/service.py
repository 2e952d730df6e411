"""``POST /search`` end to end: validate, check the grant, caches, retrieve, rerank, store.

Cache protocol (see ``edgeindex.cache``): the entities' sequences are read
*before* the database query and the result is stored only if none moved, so a
result computed from a snapshot older than an ingestion commit is never cached.
The exact cache is one KV read, so a hit costs no model call and no database
work beyond authentication (which is cached in-process).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from .. import cache, sqlfiles
from ..errors import ValidationError
from ..tenancy import Principal
from . import defaults, engine
from .cache_keys import CacheKeys, cache_keys
from .request import SearchRequest, parse_request

SQL = sqlfiles.load("search.sql")
T = TypeVar("T")
PRUNE_EVERY = 200  # semantic-cache stores between two prunes of expired pointers (per process)
_stores = itertools.count(1)


def prepare_query_embedding(embedder: Any) -> None:
    """Single queries through ONNX Runtime (shared/bindings/onnx_query.py): ~3 ms instead of ~8.

    Called by the search worker at start-up, and by the evaluation so that Chroma's queries
    are embedded exactly as ours. A remote embedder has nothing to prepare.
    """
    prepare = getattr(embedder, "prepare_queries", None)
    if prepare is not None:
        prepare()


def resolve_entities(principal: Principal, requested: list[str] | None) -> list[str]:
    """The entities to search: the requested ones (403 if any is outside the grant) or all granted."""
    if requested is None:
        if principal.is_admin:
            raise ValidationError("an admin key must name the entities to search", field="entity_ids")
        return sorted(principal.entity_ids)
    return sorted(principal.check(requested))


def _chunk_ids(results: list[dict]) -> list[str]:
    ids = []
    for r in results:
        ids.append(r["chunk_id"])
        ids.extend(str(n["chunk_id"]) for n in r.get("neighbours") or [])
    return ids


async def _semantic_hit(env: Any, ctx: Any, keys: CacheKeys, embedding) -> dict | None:
    threshold = env.var("SEMANTIC_CACHE_THRESHOLD", float)
    matches = await env.SEMANTIC_CACHE.query(embedding, namespace=keys.namespace, top_k=1, min_score=threshold)
    if not matches:
        return None
    hit = cache.load(env.KV, matches[0].id)
    if hit is None:
        # The result it pointed to was invalidated or expired: forget the pointer.
        ctx.wait_until(env.SEMANTIC_CACHE.delete(matches[0].id))
    return hit


async def _remember(env: Any, keys: CacheKeys, embedding, query: str, ttl: float) -> None:
    await env.SEMANTIC_CACHE.upsert(keys.exact, embedding, namespace=keys.namespace, metadata={"query": query})
    if next(_stores) % PRUNE_EVERY == 0:
        await env.DB.execute(SQL["semantic_prune"], {"index": env.SEMANTIC_CACHE.index_name, "ttl": ttl})


async def _rerank(env: Any, request: SearchRequest, results: list[dict]) -> list[dict]:
    scores = await env.RERANKER.rerank(request.query, [r["text"] or "" for r in results])
    for result, score in zip(results, scores, strict=True):
        result["scores"]["fused"] = result["score"]
        result["scores"]["rerank"] = round(score, 6)
        result["score"] = round(score, 6)
    results.sort(key=lambda r: r["score"], reverse=True)
    results = results[:request.k]
    if not request.include.text:
        for r in results:
            r.pop("text", None)
    return results


async def _timed(awaitable: Awaitable[T], timings: dict[str, float], name: str) -> T:
    mark = time.perf_counter()
    try:
        return await awaitable
    finally:
        timings[name] = _since(mark)


def _abandon(ctx: Any, task: asyncio.Future) -> None:
    """The request failed while ``task`` ran beside it: the request's own error is the one reported."""
    if not task.done():
        ctx.wait_until(task)  # finished (and any error of its own logged) off the request path
    elif not task.cancelled():
        task.exception()  # retrieved, so asyncio does not warn about it


def _since(mark: float) -> float:
    return round((time.perf_counter() - mark) * 1000, 2)


def _respond(payload: dict, kind: str, started: float) -> dict:
    return {**payload, "count": len(payload["results"]), "cache": kind,
            "took_ms": round((time.perf_counter() - started) * 1000, 2)}


async def search(env: Any, ctx: Any, principal: Principal, body: dict) -> dict:
    started = time.perf_counter()
    request = parse_request(body, max_k=env.var("MAX_K", int), max_query_chars=env.var("MAX_QUERY_CHARS", int))
    entity_ids = resolve_entities(principal, request.entity_ids)
    reranker = getattr(env, "RERANKER", None)
    if request.rerank and reranker is None:
        raise ValidationError("rerank is not configured on this deployment (set the RERANK_URL var)", field="rerank")
    keys = cache_keys(request, entity_ids)
    kv = env.KV

    if request.cache and (hit := cache.load(kv, keys.exact)) is not None:
        return _respond(hit, "exact", started)

    timings: dict[str, float] = {}
    limit = max(request.k, defaults.RERANK_CANDIDATES) if request.rerank else request.k
    sequences = cache.read_sequences(kv, entity_ids)  # before any database read: see the module docstring
    # The query is embedded (model, in this process) while Postgres runs the half of the search
    # that needs no embedding (scope and BM25): on two cores they overlap.
    mark = time.perf_counter()
    lexical = asyncio.ensure_future(_timed(engine.lexical(env.DB, request, entity_ids, limit=limit),
                                           timings, "lexical_ms"))
    try:
        embedding = await env.AI.embedder.embed_query(request.query)
        timings["embed_ms"] = _since(mark)
        if request.cache:
            semantic_mark = time.perf_counter()
            hit = await _semantic_hit(env, ctx, keys, embedding)
            timings["semantic_lookup_ms"] = _since(semantic_mark)
            if hit is not None:
                ctx.wait_until(lexical)  # its answer is not needed; let it finish off the request path
                return {**_respond(hit, "semantic", started), "timings": timings}
        lexical_result = await lexical
    except BaseException:
        _abandon(ctx, lexical)
        raise

    mark = time.perf_counter()
    rows = await engine.retrieve(env.DB, request, entity_ids, embedding, lexical_result=lexical_result,
                                 limit=limit, include_text=True if request.rerank else None)
    timings["hybrid_ms"] = _since(mark)
    if request.rerank:
        mark = time.perf_counter()
        results = await _rerank(env, request, [engine.shape(r, request, text=True) for r in rows])
        timings["rerank_ms"] = _since(mark)
    else:
        results = [engine.shape(r, request) for r in rows]
    if request.order == "reverse":
        results.reverse()
    # query words the entities have never seen, and the vocabulary terms that stood in for them
    payload = {"results": results, "entity_ids": entity_ids, "corrections": lexical_result.corrections}

    if request.cache:
        ttl = env.var("CACHE_TTL_SECONDS", float)
        stored = cache.store(kv, keys.exact, payload, chunk_ids=_chunk_ids(results), entity_ids=entity_ids,
                             sequences=sequences, ttl=ttl)
        if stored:
            ctx.wait_until(_remember(env, keys, embedding, request.query, ttl))
    return {**_respond(payload, "none", started), "timings": timings}
