"""Start-up pieces that more than one worker builds the same way from its bindings (not a worker:
wrangler.toml names no entry module here)."""

from __future__ import annotations

from edgeindex.enhance import QueryEnhancer
from edgeindex.search.service import SearchService, SearchSettings
from edgeindex.tenancy import RateLimiter, Tenancy


def tenancy(env) -> Tenancy:
    """Key lookups on the worker's database, limited per key by its RATE_LIMIT_PER_SECOND var."""
    return Tenancy(env.DB, limiter=RateLimiter(env.var("RATE_LIMIT_PER_SECOND", float)))


def search_service(env) -> SearchService:
    """The search service over the worker's bindings, query embedding prepared."""
    search = SearchService(
        db=env.DB, kv=env.KV, embedder=env.AI.embedder, semantic_cache=env.SEMANTIC_CACHE,
        reranker=getattr(env, "RERANKER", None),  # declared in wrangler.toml; bound only when its url is set
        # query enhancement: offline PRF always; LLM synonyms and HyDE when services.ai.llm_model is set
        enhancer=QueryEnhancer(db=env.DB, kv=env.KV, embedder=env.AI.embedder, llm=env.AI.llm),
        settings=SearchSettings(max_k=env.var("MAX_K", int), max_query_chars=env.var("MAX_QUERY_CHARS", int),
                                semantic_threshold=env.var("SEMANTIC_CACHE_THRESHOLD", float),
                                cache_ttl=env.var("CACHE_TTL_SECONDS", float)))
    search.prepare()
    return search
