"""``POST /search`` end to end: validate, check the grant, caches, retrieve, rerank, store.

Cache protocol (see ``edgeindex.cache``): the entities' sequences are read
*before* the database query and the result is stored only if none moved, so a
result computed from a snapshot older than an ingestion commit is never cached.
The exact cache is one KV read, so a hit costs no model call and no database
work beyond authentication (which is cached in-process).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from .. import cache, sqlfiles
from ..errors import ValidationError
from ..tenancy import Principal
from . import defaults, engine
from .cache_keys import CacheKeys, cache_keys
from .request import SearchRequest, parse_request

SQL = sqlfiles.load("search.sql")
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
    mark = time.perf_counter()
    embedding = await env.AI.embedder.embed_query(request.query)
    timings["embed_ms"] = _since(mark)
    if request.cache:
        mark = time.perf_counter()
        hit = await _semantic_hit(env, ctx, keys, embedding)
        timings["semantic_lookup_ms"] = _since(mark)
        if hit is not None:
            return {**_respond(hit, "semantic", started), "timings": timings}

    sequences = cache.read_sequences(kv, entity_ids)  # before the query: see the module docstring
    mark = time.perf_counter()
    if request.rerank:
        rows = await engine.retrieve(env.DB, request, entity_ids, embedding,
                                     limit=max(request.k, defaults.RERANK_CANDIDATES), include_text=True)
        results = await _rerank(env, request, [engine.shape(r, request, text=True) for r in rows])
    else:
        rows = await engine.retrieve(env.DB, request, entity_ids, embedding)
        results = [engine.shape(r, request) for r in rows]
    timings["search_ms"] = _since(mark)
    # every row carries the same corrections: query words the entities have never seen,
    # and the vocabulary terms that stood in for them
    corrections = (rows[0]["corrections"] if rows else None) or {}
    payload = {"results": results, "entity_ids": entity_ids, "corrections": corrections}

    if request.cache:
        ttl = env.var("CACHE_TTL_SECONDS", float)
        stored = cache.store(kv, keys.exact, payload, chunk_ids=_chunk_ids(results), entity_ids=entity_ids,
                             sequences=sequences, ttl=ttl)
        if stored:
            ctx.wait_until(_remember(env, keys, embedding, request.query, ttl))
    return {**_respond(payload, "none", started), "timings": timings}
