"""MCP worker: the search service's tools for agents over MCP's streamable HTTP transport at ``/mcp``
(stateless, JSON responses), authenticated by the same API keys and entity grants as HTTP."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from edgeindex.errors import EdgeIndexError, RateLimited
from edgeindex.history.retention import Retention
from edgeindex.history.service import HistoryService
from edgeindex.mcp_server.asgi import call_asgi
from edgeindex.mcp_server.messages import precheck
from edgeindex.mcp_server.server import CONTEXT, PRINCIPAL, build_server
from edgeindex.mcp_server.service import McpTools
from edgeindex.runtime.http import (
    Routes,
    error_body,
    json_response,
    read_body,
    request_id,
)
from edgeindex.search.service import SearchService
from edgeindex.tenancy import Tenancy
from edgeindex.uploads.service import UploadLimits, UploadService

# prepare_model: what the worker prepares on a model, run ahead of a model cutover (runtime/serving_model.py)
from edgeindex.workers._startup import (
    prepare_model as prepare_model,
)
from edgeindex.workers._startup import search_service, selection_service, tenancy, trajectory_service
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

routes = Routes()
MAX_BODY_BYTES = 1_000_000  # a search body or a small upload_text document, in JSON-RPC


@dataclass(frozen=True)
class Services:
    tenancy: Tenancy
    sessions: StreamableHTTPSessionManager
    background: set[asyncio.Task]
    search: SearchService   # what its tools search with (entities another model serves: runtime/serving_model.py)


async def startup(env) -> Services:
    search = await search_service(env)
    limits = UploadLimits(
        max_bytes=env.var("MAX_UPLOAD_BYTES", int), multipart_threshold=env.var("MAX_UPLOAD_BYTES", int),
        part_bytes=env.var("MAX_UPLOAD_BYTES", int), allowed_types=["text/plain", "text/markdown", "text/html"],
        presign_expires=env.BUCKET.presign_expires)
    uploads = UploadService(db=env.DB, bucket=env.BUCKET, kv=env.KV, limits=limits, signer=None)
    selection = await selection_service(env)
    server = build_server(McpTools(db=env.DB, search=search, uploads=uploads, selection=selection,
                                   trajectories=trajectory_service(env, search),
                                   history=HistoryService(db=env.DB, retention=Retention.of(env))))
    # Stateless: any process of this worker answers any request; no session to pin or expire.
    sessions = StreamableHTTPSessionManager(server, json_response=True, stateless=True,
                                            max_request_body_size=MAX_BODY_BYTES)
    services = Services(tenancy(env), sessions, set(), search)
    running = asyncio.Event()

    async def run_sessions() -> None:
        async with sessions.run():
            running.set()
            await asyncio.Event().wait()  # for the life of the process

    services.background.add(asyncio.create_task(run_sessions()))
    await running.wait()
    return services


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


async def mcp(request, services: Services, ctx):
    # The boundary authenticates, as every HTTP route does: a bad key is refused before MCP, with a
    # JSON-RPC error (which MCP clients show) carrying the HTTP API's error body in its data.
    try:
        principal = await services.tenancy.authenticate(request.headers)
    except EdgeIndexError as exc:
        return jsonrpc_refusal(exc, request_id(request))
    body = await read_body(request, max_bytes=MAX_BODY_BYTES)
    if (refused := precheck(body, request_id(request))) is not None:
        return refused
    return await call_asgi(services.sessions.handle_request, request, body,
                           extra_scope={PRINCIPAL: principal, CONTEXT: ctx})


def jsonrpc_refusal(exc: EdgeIndexError, rid: str):
    data = error_body(exc.code, exc.message, field=exc.field, request_id=rid)
    headers = {"WWW-Authenticate": 'Bearer realm="edgeindex"'} if exc.status == 401 else {}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return json_response({"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32001, "message": f"{exc.code}: {exc.message}", "data": data}},
                         exc.status, headers=headers)


# POST only: stateless JSON mode has no session to resume (GET) or end (DELETE), and the SDK's
# client sends neither without a session id; they get the router's JSON 405.
routes.post("/mcp", summary="MCP streamable HTTP endpoint (JSON-RPC; tools/list names the tools: search and "
            "trajectories, documents and chunks, uploads, tool and index selection, feedback)")(mcp)
