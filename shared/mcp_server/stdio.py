"""``edgeindex mcp --api-key KEY [--url URL]``: MCP over stdio for desktop agents, bridged to the MCP
worker's streamable HTTP endpoint with the SDK's own client.

The bridge holds no services, model or database: it lists and calls exactly the tools the worker
serves, with the key's own grants (the worker authenticates every request), so stdio and HTTP
cannot differ. A refused key (or an unreachable worker) stops it at start-up with the reason on
stderr, where desktop agents show a server's log."""

from __future__ import annotations

import sys

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.stdio import stdio_server

DEFAULT_URL = "http://127.0.0.1:8790/mcp"


class BridgeError(Exception):
    """The worker could not be reached or refused the key."""


async def serve_stdio(url: str, api_key: str, *, timeout: float = 60.0) -> None:
    headers = {"Authorization": f"Bearer {api_key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as upstream:
                try:
                    init = await upstream.initialize()
                except Exception as exc:  # the SDK reports a 401/403 or a refused connection as an error here
                    raise BridgeError(f"{url} refused to start an MCP session: {exc}") from exc

                async def on_list_tools(ctx, params) -> types.ListToolsResult:
                    return await upstream.list_tools()

                async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
                    return await upstream.call_tool(params.name, params.arguments or {})

                server = Server(init.server_info.name, instructions=init.instructions,
                                on_list_tools=on_list_tools, on_call_tool=on_call_tool)
                async with stdio_server() as (stdin, stdout):
                    await server.run(stdin, stdout, server.create_initialization_options())


def main(url: str, api_key: str) -> int:
    import anyio

    try:
        anyio.run(serve_stdio, url, api_key)
    except BaseException as exc:  # the SDK's task groups wrap what is raised inside them
        refused = _find(exc, BridgeError)
        if refused is None:
            raise
        print(f"edgeindex mcp: {refused}", file=sys.stderr)
        return 2
    return 0


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := _find(inner, kind)) is not None:
            return found
    return None
