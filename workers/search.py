"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

from dataclasses import dataclass

from edgeindex import api_models
from edgeindex.runtime.http import Routes, read_json
from edgeindex.search.request import SearchRequest
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import RateLimiter, Tenancy

routes = Routes()
MAX_BODY_BYTES = 256_000


@dataclass(frozen=True)
class Services:
    tenancy: Tenancy
    search: SearchService


async def startup(env) -> Services:
    search = SearchService(
        db=env.DB, kv=env.KV, embedder=env.AI.embedder, semantic_cache=env.SEMANTIC_CACHE,
        reranker=getattr(env, "RERANKER", None),  # declared in wrangler.toml; bound only when its url is set
        settings=SearchSettings(max_k=env.var("MAX_K", int), max_query_chars=env.var("MAX_QUERY_CHARS", int),
                                semantic_threshold=env.var("SEMANTIC_CACHE_THRESHOLD", float),
                                cache_ttl=env.var("CACHE_TTL_SECONDS", float)))
    search.prepare()
    return Services(Tenancy(env.DB, limiter=RateLimiter(env.var("RATE_LIMIT_PER_SECOND", float))), search)


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


@routes.post("/search", summary="Hybrid search over the entities the key is granted",
             request=SearchRequest, response=api_models.SearchResponse)
async def search(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await services.search.search(principal, body, background=ctx)
