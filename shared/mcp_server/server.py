"""The MCP server over the worker's services: a low-level ``mcp`` Server whose tools are
``tools.tool_definitions()`` and whose calls go to ``McpTools`` for the principal the HTTP boundary
authenticated (``workers/mcp.py`` puts it, and the worker's ctx, in the ASGI scope)."""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server import Server

from ..errors import EdgeIndexError, Unauthorized
from ..json_codec import encode_default
from .service import McpTools
from .tools import output_schemas, tool_definitions

log = logging.getLogger(__name__)
PRINCIPAL = "edgeindex.principal"
CONTEXT = "edgeindex.ctx"  # the worker's ExecutionContext (wait_until)
SERVER_NAME = "edgeindex"
INSTRUCTIONS = ("Search an edgeindex retrieval service: `search` first, then `get_chunk` (neighbours) or "
                "`get_document` to read around a hit. For a task of several searches, name one `trajectory` "
                "in each: what it returned before is left out, `expand` widens around a hit without "
                "repeats, and the `trajectory` tool lists what it touched; stop when novelty is 0. "
                "Results only ever come from entities this API key is granted.")


def list_tools_result() -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"],
                   output_schema=t.get("outputSchema"))
        for t in tool_definitions()])


def text_result(body: Any, *, error: bool = False, structured: bool = False) -> types.CallToolResult:
    # Compact JSON: every character of a result lands in the agent's context window. A tool with an
    # output schema also answers the same object as structuredContent (the text is for older clients).
    text = json.dumps(body, default=encode_default, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error,
                                structured_content=body if structured else None)


def build_server(tools: McpTools) -> Server:
    listed = list_tools_result()
    structured = set(output_schemas())

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return listed

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        principal = request.scope.get(PRINCIPAL) if request is not None else None
        try:
            if principal is None:  # the boundary authenticates every request; this is a guard
                raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'", field="Authorization")
            return text_result(await tools.call(principal, params.name, dict(params.arguments or {}),
                                                background=request.scope.get(CONTEXT)),
                               structured=params.name in structured)
        except EdgeIndexError as exc:
            if exc.status >= 500:
                log.exception("MCP tool %s failed", params.name)
            # A tool error is a result the agent reads and can correct, with the HTTP API's code and field.
            return text_result(exc.to_dict(), error=True)
        except Exception:  # as the HTTP boundary does: the traceback to the log, never to the client
            log.exception("MCP tool %s: unexpected error", params.name)
            return text_result({"error": "internal", "message": "unexpected error; the worker's log has the details"},
                               error=True)

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
