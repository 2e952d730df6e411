"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

from edgeindex import tenancy
from edgeindex.runtime.router import Router, read_json
from edgeindex.search import service
from edgeindex.search.rerank import HTTPReranker
from edgeindex.selection import http as selection

router = Router()
MAX_BODY_BYTES = 256_000


async def startup(env) -> None:
    service.prepare_query_embedding(env.AI.embedder)
    # The reranker is optional: a binding only when its URL var is set.
    url = str(env.worker.vars.get("RERANK_URL", "") or "")
    if url:
        env.bind("RERANKER", HTTPReranker(url, model=str(env.worker.vars.get("RERANK_MODEL", "") or "")))


@router.post("/search")
async def search(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await service.search(env, ctx, principal, body)


# Tool and index selection for agents (edgeindex.selection.http).

@router.post("/entities/{entity}/tools")
async def register_tools(request, env, ctx, entity):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=selection.MAX_REGISTER_BYTES)
    return await selection.register_tools(env, principal, entity, body)


@router.get("/entities/{entity}/tools")
async def list_tools(request, env, ctx, entity):
    principal = await tenancy.authenticate(env.DB, request.headers)
    return await selection.list_tools(env, principal, entity)


@router.delete("/entities/{entity}/tools/{name}")
async def delete_tool(request, env, ctx, entity, name):
    principal = await tenancy.authenticate(env.DB, request.headers)
    return await selection.delete_tool(env, principal, entity, name)


@router.post("/tools/select")
async def select_tools(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=selection.MAX_SELECT_BYTES)
    return await selection.select_tools(env, principal, body)


@router.post("/tools/feedback")
async def tool_feedback(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=selection.MAX_SELECT_BYTES)
    return await selection.tool_feedback(env, principal, body)


@router.post("/entities/{entity}/indices")
async def register_indices(request, env, ctx, entity):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=selection.MAX_REGISTER_BYTES)
    return await selection.register_indices(env, principal, entity, body)


@router.get("/entities/{entity}/indices")
async def list_indices(request, env, ctx, entity):
    principal = await tenancy.authenticate(env.DB, request.headers)
    return await selection.list_indices(env, principal, entity)


@router.delete("/entities/{entity}/indices/{name}")
async def delete_index(request, env, ctx, entity, name):
    principal = await tenancy.authenticate(env.DB, request.headers)
    return await selection.delete_index(env, principal, entity, name)


@router.post("/indices/select")
async def select_indices(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=selection.MAX_SELECT_BYTES)
    return await selection.select_indices(env, principal, body)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)
