"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

from edgeindex import api_models, tenancy
from edgeindex.runtime.router import Router, read_json
from edgeindex.search import service
from edgeindex.search.request import SearchRequest
from edgeindex.search.rerank import HTTPReranker

router = Router()
MAX_BODY_BYTES = 256_000


async def startup(env) -> None:
    service.prepare_query_embedding(env.AI.embedder)
    # The reranker is optional: a binding only when its URL var is set.
    url = str(env.worker.vars.get("RERANK_URL", "") or "")
    if url:
        env.bind("RERANKER", HTTPReranker(url, model=str(env.worker.vars.get("RERANK_MODEL", "") or "")))


@router.post("/search", summary="Hybrid search over the entities the key is granted",
             request=SearchRequest, response=api_models.SearchResponse)
async def search(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await service.search(env, ctx, principal, body)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)
