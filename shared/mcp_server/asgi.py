"""Serve an ASGI app (the MCP SDK's streamable HTTP transport) from an aiohttp handler, so the MCP
worker runs on the same runtime, error boundary and port scheme as every other worker.

The body is read whole by the caller (with the route's limit) and handed over as one message;
the response is streamed as the app sends it (JSON, or SSE events)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

Scope = dict[str, Any]


async def call_asgi(app, request: web.Request, body: bytes, *, extra_scope: dict | None = None) -> web.StreamResponse:
    host, _, port = (request.host or "localhost").partition(":")
    scope: Scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": request.method, "scheme": request.scheme, "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"), "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0), "server": (host, int(port or 80)),
        "state": {}, **(extra_scope or {}),
    }
    done = asyncio.Event()
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the app listens for a disconnect while it streams: it comes when we finish
        return {"type": "http.disconnect"}

    response: web.StreamResponse | None = None
    start: dict | None = None

    async def send(message: dict) -> None:
        nonlocal response, start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            if response is None:
                response = web.StreamResponse(status=start["status"])
                for name, value in start.get("headers", []):
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                await response.prepare(request)
            if chunk := message.get("body", b""):
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    if response is None:  # headers only (e.g. 202 Accepted for a notification)
        if start is None:
            return web.Response(status=500)
        response = web.Response(status=start["status"])
        for name, value in start.get("headers", []):
            response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
    return response
