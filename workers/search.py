"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

from dataclasses import dataclass

from edgeindex import api_models
from edgeindex.routing.feedback_model import FeedbackRequest
from edgeindex.runtime.http import Routes, read_json
from edgeindex.search.request import SearchRequest
from edgeindex.search.service import SearchService
from edgeindex.selection.http import (
    MAX_REGISTER_BYTES,
    MAX_SELECT_BYTES,
    SelectionService,
)
from edgeindex.tenancy import Tenancy
from edgeindex.workers._startup import search_service, tenancy

routes = Routes()
MAX_BODY_BYTES = 256_000


@dataclass(frozen=True)
class Services:
    tenancy: Tenancy
    search: SearchService
    selection: SelectionService


async def startup(env) -> Services:
    search = search_service(env)
    await search.router.start()  # the built-in router model, stored as the first version
    return Services(tenancy(env), search,
                    SelectionService(env.DB, env.AI.embedder, env.AI.llm))


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


@routes.post("/search", summary="Hybrid search over the entities the key is granted",
             request=SearchRequest, response=api_models.SearchResponse)
async def search(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await services.search.search(principal, body, background=ctx)


@routes.post("/feedback", summary="Which results of a search were useful: bounded online updates of the router",
             request=FeedbackRequest, response=api_models.FeedbackResponse)
async def feedback(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await services.search.router.feedback(principal, body)


# Tool and index selection for agents (edgeindex.selection).

@routes.post("/entities/{entity}/tools")
async def register_tools(request, services: Services, ctx, entity):
    """Register or update tools (plain, OpenAI or MCP definitions); unchanged ones are not re-embedded."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_REGISTER_BYTES)
    return await services.selection.register_tools(principal, entity, body)


@routes.get("/entities/{entity}/tools")
async def list_tools(request, services: Services, ctx, entity):
    """List an entity's tools with their token counts and model id."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.list_tools(principal, entity)


@routes.delete("/entities/{entity}/tools/{name}")
async def delete_tool(request, services: Services, ctx, entity, name):
    """Delete one tool."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.delete_tool(principal, entity, name)


@routes.post("/tools/select")
async def select_tools(request, services: Services, ctx):
    """Choose the tools for a request: definitions, scores, reasons and a token account."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.select_tools(principal, body)


@routes.post("/tools/feedback")
async def tool_feedback(request, services: Services, ctx):
    """Record which tools an agent actually used for a request (bounded learning)."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.tool_feedback(principal, body)


@routes.post("/entities/{entity}/indices")
async def register_indices(request, services: Services, ctx, entity):
    """Register or update index descriptors (name, description, fields)."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_REGISTER_BYTES)
    return await services.selection.register_indices(principal, entity, body)


@routes.get("/entities/{entity}/indices")
async def list_indices(request, services: Services, ctx, entity):
    """List an entity's index descriptors."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.list_indices(principal, entity)


@routes.delete("/entities/{entity}/indices/{name}")
async def delete_index(request, services: Services, ctx, entity, name):
    """Delete one index descriptor."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.delete_index(principal, entity, name)


@routes.post("/indices/select")
async def select_indices(request, services: Services, ctx):
    """Rank the indices a request should search, with evidence and confidence."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.select_indices(principal, body)
