"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

from dataclasses import dataclass

from edgeindex import api_models
from edgeindex.json_codec import decode_json_object
from edgeindex.routing.feedback_model import FeedbackRequest
from edgeindex.runtime.http import Routes, json_bytes_response, json_response, read_json, read_json_bytes
from edgeindex.search.service import SearchService
from edgeindex.selection import models as selection_models
from edgeindex.selection.http import (
    MAX_REGISTER_BYTES,
    MAX_SELECT_BYTES,
    SelectionService,
)
from edgeindex.tenancy import Tenancy
from edgeindex.trajectories import service as trajectories
from edgeindex.trajectories.service import TrajectoryService

# prepare_model: what the worker prepares on a model, run ahead of a model cutover (runtime/serving_model.py)
from edgeindex.workers._startup import (
    prepare_model as prepare_model,
)
from edgeindex.workers._startup import search_service, selection_service, tenancy, trajectory_service

routes = Routes()
MAX_BODY_BYTES = 256_000


@dataclass(frozen=True)
class Services:
    tenancy: Tenancy
    search: SearchService
    selection: SelectionService
    trajectories: TrajectoryService


async def startup(env) -> Services:
    search = await search_service(env)
    await search.router.start()  # the built-in router model, stored as the first version
    return Services(tenancy(env), search, await selection_service(env), trajectory_service(env, search))


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


@routes.post("/search", summary="Hybrid search over the entities the key is granted (a step of a trajectory "
             "when it names one)", request=trajectories.TrajectorySearchRequest, response=api_models.SearchResponse)
async def search(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    raw = await read_json_bytes(request, max_bytes=MAX_BODY_BYTES)
    if b'"trajectory"' in raw or b'"seen"' in raw:  # the plain path keeps its remembered bodies (search_json)
        body = decode_json_object(raw)
        trajectories.check_body(body)
        if "trajectory" in body:
            return await services.trajectories.step(principal, body, background=ctx)
    answer = await services.search.search_json(principal, raw, background=ctx)
    # a cache hit comes already encoded (search/request_memo.py)
    return json_bytes_response(answer) if isinstance(answer, bytes) else answer


@routes.post("/trajectories", summary="A new trajectory: searches that name it leave out what it returned before",
             request=trajectories.CreateTrajectory, response=api_models.TrajectoryCreated, status=201)
async def create_trajectory(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return json_response(services.trajectories.create(principal, body), 201)


@routes.get("/trajectories/{trajectory}", summary="What a trajectory touched: documents with summaries, queries, "
            "chunks with their text", response=api_models.TrajectoryGrounding)
async def get_trajectory(request, services: Services, ctx, trajectory):
    principal = await services.tenancy.authenticate(request.headers)
    return await services.trajectories.grounding(principal, trajectory)


@routes.post("/trajectories/{trajectory}/expand", summary="Widen around a chunk the trajectory returned: its "
             "neighbours, the rest of its document, or the chunks nearest it in meaning, never repeating one",
             request=trajectories.ExpandRequest, response=api_models.TrajectoryExpansion)
async def expand_trajectory(request, services: Services, ctx, trajectory):
    principal = await services.tenancy.authenticate(request.headers)
    return await services.trajectories.expand(principal, trajectory, await read_json(request, max_bytes=MAX_BODY_BYTES))


@routes.delete("/trajectories/{trajectory}", summary="Forget a trajectory", response=api_models.TrajectoryDeleted)
async def delete_trajectory(request, services: Services, ctx, trajectory):
    principal = await services.tenancy.authenticate(request.headers)
    return services.trajectories.delete(principal, trajectory)


@routes.post("/feedback", summary="Which results of a search were useful: bounded online updates of the router",
             request=FeedbackRequest, response=api_models.FeedbackResponse)
async def feedback(request, services: Services, ctx):
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await services.search.router.feedback(principal, body)


# Tool and index selection for agents (edgeindex.selection).

@routes.post("/entities/{entity}/tools", request=selection_models.ToolsRegisterRequest, response=selection_models.ToolRegistration)
async def register_tools(request, services: Services, ctx, entity):
    """Register or update tools (plain, OpenAI or MCP definitions); unchanged ones are not re-embedded."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_REGISTER_BYTES)
    return await services.selection.register_tools(principal, entity, body)


@routes.get("/entities/{entity}/tools", response=selection_models.ToolList)
async def list_tools(request, services: Services, ctx, entity):
    """List an entity's tools with their token counts and model id."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.list_tools(principal, entity)


@routes.delete("/entities/{entity}/tools/{name}", response=selection_models.Deleted)
async def delete_tool(request, services: Services, ctx, entity, name):
    """Delete one tool."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.delete_tool(principal, entity, name)


@routes.post("/tools/select", request=selection_models.ToolSelectRequest, response=selection_models.ToolSelection)
async def select_tools(request, services: Services, ctx):
    """Choose the tools for a request: definitions, scores, reasons and a token account."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.select_tools(principal, body)


@routes.post("/tools/feedback", request=selection_models.ToolFeedbackRequest, response=selection_models.FeedbackResult)
async def tool_feedback(request, services: Services, ctx):
    """Record which tools an agent actually used for a request (bounded learning)."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.tool_feedback(principal, body)


@routes.post("/entities/{entity}/indices", request=selection_models.IndicesRegisterRequest,
             response=selection_models.IndexRegistration)
async def register_indices(request, services: Services, ctx, entity):
    """Register or update index descriptors (name, description, fields)."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_REGISTER_BYTES)
    return await services.selection.register_indices(principal, entity, body)


@routes.get("/entities/{entity}/indices", response=selection_models.IndexList)
async def list_indices(request, services: Services, ctx, entity):
    """List an entity's index descriptors."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.list_indices(principal, entity)


@routes.delete("/entities/{entity}/indices/{name}", response=selection_models.Deleted)
async def delete_index(request, services: Services, ctx, entity, name):
    """Delete one index descriptor."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.delete_index(principal, entity, name)


@routes.post("/indices/select", request=selection_models.IndexSelectRequest, response=selection_models.IndexSelection)
async def select_indices(request, services: Services, ctx):
    """Rank the indices a request should search, with evidence and confidence."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.select_indices(principal, body)


@routes.get("/entities/{entity}/collections", response=selection_models.CollectionList)
async def list_collections(request, services: Services, ctx, entity):
    """List an entity's collections with their profiles (kept current by the ingest worker)."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.list_collections(principal, entity)


@routes.get("/entities/{entity}/collections/{name}", response=selection_models.CollectionDetail)
async def get_collection(request, services: Services, ctx, entity, name):
    """One collection with its profile."""
    principal = await services.tenancy.authenticate(request.headers)
    return await services.selection.get_collection(principal, entity, name)


@routes.put("/entities/{entity}/collections/{name}", request=selection_models.CollectionDescription,
            response=selection_models.CollectionDetail)
async def describe_collection(request, services: Services, ctx, entity, name):
    """Set a collection's description (index selection reads it at once)."""
    principal = await services.tenancy.authenticate(request.headers)
    body = await read_json(request, max_bytes=MAX_SELECT_BYTES)
    return await services.selection.describe_collection(principal, entity, name, body)
