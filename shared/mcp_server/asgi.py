"""Serve an ASGI app (the MCP SDK's streamable HTTP transport) from an aiohttp handler, so the MCP
worker runs on the same runtime, error boundary and port scheme as every other worker.

The body is read whole by the caller (with the route's limit) and handed over as one message;
the response is streamed as the app sends it (JSON, or SSE events)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from ..errors import ValidationError
from ..runtime.http import REQUEST_ID_HEADER, _code_for, error_body, json_response, request_id

Scope = dict[str, Any]
_AUTHORITY = re.compile(r"^(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]]*))(?::(?P<port>[0-9]{1,5}))?$")


def server_of(host_header: str | None, default_port: int = 80) -> tuple[str, int]:
    """ASGI's ``server`` (host, port) from a Host header: a name or an IPv4 address, or an IPv6 address
    in brackets, with an optional port; anything else is the client's mistake (400 naming Host)."""
    found = _AUTHORITY.match(host_header or "localhost")
    port = int(found["port"]) if found and found["port"] else default_port
    if found is None or not 0 < port < 65536:
        raise ValidationError(f"Host: {str(host_header)[:100]!r} is not a host with an optional port "
                              "(name, IPv4 or [IPv6], then :1-65535)", field="Host")
    return found["ipv6"] or found["name"] or "localhost", port


async def call_asgi(app, request: web.Request, body: bytes, *, extra_scope: dict | None = None) -> web.StreamResponse:
    host, port = server_of(request.host)
    rid = request_id(request)
    scope: Scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": request.method, "scheme": request.scheme, "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"), "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0), "server": (host, port),
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
    plain_error: list[bytes] | None = None  # a refusal the SDK wrote as plain text: made JSON below

    async def send(message: dict) -> None:
        nonlocal response, start, plain_error
        if message["type"] == "http.response.start":
            start = message
            media = dict(message.get("headers", [])).get(b"content-type", b"").split(b";")[0].strip()
            if message["status"] >= 400 and not media.endswith(b"json"):
                plain_error = []
        elif message["type"] == "http.response.body" and plain_error is not None:
            plain_error.append(message.get("body", b""))
        elif message["type"] == "http.response.body":
            if response is None:
                response = web.StreamResponse(status=start["status"])
                for name, value in start.get("headers", []):
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                # set before the headers go out: the error boundary's own setting comes too late for a stream
                response.headers[REQUEST_ID_HEADER] = rid
                await response.prepare(request)
            if chunk := message.get("body", b""):
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await app(scope, receive, send)
    finally:
        done.set()
    if plain_error is not None:  # every refusal in the project's JSON error shape, as at the HTTP boundary
        message = b"".join(plain_error).decode("utf-8", "replace").strip()[:300] or "refused"
        return json_response(error_body(_code_for(start["status"]), message, request_id=rid), start["status"])
    if response is None:  # headers only (e.g. 202 Accepted for a notification)
        if start is None:
            return web.Response(status=500)
        response = web.Response(status=start["status"])
        for name, value in start.get("headers", []):
            response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
    return response
