"""Start-up pieces that more than one worker builds the same way from its bindings (not a worker:
wrangler.toml names no entry module here)."""

from __future__ import annotations

import asyncio

from edgeindex import startup_progress, token_count
from edgeindex.bindings.ai import local_embedder, local_model
from edgeindex.models.shadow import ShadowModel
from edgeindex.routing.model import Bounds
from edgeindex.routing.service import Router, RouterSettings
from edgeindex.search.as_of import AsOfSearch
from edgeindex.search.enhance import QueryEnhancer
from edgeindex.search.service import SearchService, SearchSettings, prepare_query_embedding
from edgeindex.selection.http import SelectionService
from edgeindex.tenancy import RateLimiter, Tenancy
from edgeindex.trajectories.service import TrajectoryService
from edgeindex.trajectories.store import Limits, TrajectoryStore


def tenancy(env) -> Tenancy:
    """Key lookups on the worker's database, limited per key by its RATE_LIMIT_PER_SECOND var, in the
    shared KV's token buckets when it has them (Redis), else in this process's."""
    token_buckets = getattr(getattr(env, "KV", None), "token_buckets", None)
    buckets = token_buckets() if token_buckets is not None else None
    return Tenancy(env.DB, limiter=RateLimiter(env.var("RATE_LIMIT_PER_SECOND", float), buckets=buckets))


async def search_service(env) -> SearchService:
    """The search service over the worker's bindings, query embedding prepared (in a thread: a worker
    that follows a model cutover goes on answering while it prepares the new model's encoder)."""
    search = SearchService(
        db=env.DB, kv=env.KV, embedder=env.AI.embedder, semantic_cache=env.SEMANTIC_CACHE,
        reranker=getattr(env, "RERANKER", None),  # declared in wrangler.toml; bound only when its url is set
        # query enhancement: offline PRF always; LLM synonyms and HyDE when services.ai.llm_model is set
        enhancer=QueryEnhancer(db=env.DB, kv=env.KV, embedder=env.AI.embedder, llm=env.AI.llm),
        settings=SearchSettings(max_k=env.var("MAX_K", int), max_query_chars=env.var("MAX_QUERY_CHARS", int),
                                semantic_threshold=env.var("SEMANTIC_CACHE_THRESHOLD", float),
                                cache_ttl=env.var("CACHE_TTL_SECONDS", float),
                                hnsw_ef_search=env.var("HNSW_EF_SEARCH", int)),
        router=router(env), history=AsOfSearch(env.DB), shadow=await shadow_model(env))
    startup_progress.report("preparing the query encoder (exported once per machine)")
    await asyncio.to_thread(search.prepare)
    return search


async def shadow_model(env) -> ShadowModel | None:
    """MODEL_SHADOW's model, loaded beside the serving one (~0.5 GB for multilingual-e5-small)."""
    name = env.var("MODEL_SHADOW")
    if not name:
        return None
    spec = local_model(name)
    if spec.model_id == env.AI.embedder.model_id:
        return None   # the shadow model serves now (a cutover): nothing to compare
    startup_progress.report(f"loading the shadow model {name}")
    embedder = await asyncio.to_thread(local_embedder, 64, spec.name)
    return ShadowModel(env.DB, embedder, sample=env.var("MODEL_SHADOW_SAMPLE", float))


def prepare_model(embedder) -> None:
    """What a search (or MCP) worker's start-up prepares on its model, done ahead of a model cutover
    (runtime/serving_model.py): the query encoder, and tool selection's int8 copy of it."""
    prepare_query_embedding(embedder)
    prepare = getattr(embedder, "prepare_select", None)
    if prepare is not None:
        prepare("int8")


def trajectory_service(env, search: SearchService) -> TrajectoryService:
    """Trajectories kept in the worker's KV, so every search process reads the same ones."""
    limits = Limits(ttl=env.var("TRAJECTORY_TTL_SECONDS", float), max_steps=env.var("TRAJECTORY_MAX_STEPS", int),
                    max_chunks=env.var("TRAJECTORY_MAX_CHUNKS", int))
    token_count.encoding()  # the tokenizer loaded now, not by the first step (~0.2 s)
    return TrajectoryService(search=search, db=env.DB, store=TrajectoryStore(env.KV, limits))


async def selection_service(env) -> SelectionService:
    """Tool and index selection over the worker's bindings. The local embedder embeds tool selection's
    requests on the int8 copy of the query encoder (bindings/quantized_query.py: ~0.85x the p99 of fp32),
    or on fp32 when that copy cannot be made."""
    prepare = getattr(env.AI.embedder, "prepare_select", None)
    if prepare is not None:
        await asyncio.to_thread(prepare, "int8")   # quantizing takes seconds: not on the event loop
    return SelectionService(env.DB, env.AI.embedder, env.AI.llm, env.KV)


def router(env) -> Router:
    """The adaptive retrieval router (edgeindex.routing) from the worker's ROUTER_* vars."""
    return Router(env.DB, RouterSettings(
        default=env.var("ROUTER_DEFAULT"), shadow=env.var("ROUTER_SHADOW", bool), telemetry=env.var("ROUTER_TELEMETRY", bool),
        telemetry_days=env.var("ROUTER_TELEMETRY_DAYS", int),
        bounds=Bounds(learning_rate=env.var("ROUTER_LEARNING_RATE", float),
                      max_step=env.var("ROUTER_MAX_STEP", float), max_drift=env.var("ROUTER_MAX_DRIFT", float),
                      min_evidence=env.var("ROUTER_MIN_EVIDENCE", int))))
