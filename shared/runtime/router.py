"""A tiny router so a worker's ``fetch(request, env, ctx)`` stays one function.

Handlers get ``(request, env, ctx, **path_params)`` and return an aiohttp
response or a JSON-able value. Library errors become JSON error bodies with
their HTTP status here, in one place.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..errors import EdgeIndexError, ValidationError

log = logging.getLogger(__name__)
Handler = Callable[..., Awaitable[Any]]
_PARAM = re.compile(r"\{(\w+)\}")


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body, default=str), status=status, content_type="application/json")


def error_response(error: EdgeIndexError) -> web.Response:
    return json_response(error.to_dict(), status=error.status)


async def read_json(request: web.Request, *, max_bytes: int = 1_000_000) -> dict:
    """The body as a JSON object, or a 400/413 that says what is wrong."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise ValidationError(f"request body is larger than {max_bytes} bytes", field="body")
    raw = await request.content.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValidationError(f"request body is larger than {max_bytes} bytes", field="body")
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"body is not valid JSON: {exc}", field="body") from None
    if not isinstance(body, dict):
        raise ValidationError("body must be a JSON object", field="body")
    return body


@dataclass(frozen=True)
class Route:
    """A route and what the OpenAPI spec says about it (``edgeindex.runtime.openapi``)."""

    method: str
    path: str  # the template, e.g. /entities/{entity_id}/documents
    pattern: re.Pattern
    handler: Handler
    summary: str = ""
    request: type | None = None  # pydantic model of the JSON body
    query: type | None = None  # pydantic model of the query string
    response: type | None = None  # pydantic model of the success body
    status: int = 200
    body_types: tuple[str, ...] = ()  # a raw (non-JSON) body of these media types
    auth: str | None = "key"  # "key", "admin" or None (public)
    extra: dict = field(default_factory=dict)  # further OpenAPI operation fields


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(self, method: str, path: str, **doc: Any) -> Callable[[Handler], Handler]:
        """Register a handler; ``doc`` fills the Route's documentation fields (summary, request, response...)."""
        pattern = re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", path) + "$")

        def register(handler: Handler) -> Handler:
            fields = dict(doc)
            summary = (fields.pop("summary", None) or (handler.__doc__ or "").strip().split("\n")[0]
                       or f"{method.upper()} {path}")
            self.routes.append(Route(method.upper(), path, pattern, handler, summary=summary, **fields))
            return handler

        return register

    def get(self, path: str, **doc: Any):
        return self.route("GET", path, **doc)

    def post(self, path: str, **doc: Any):
        return self.route("POST", path, **doc)

    def put(self, path: str, **doc: Any):
        return self.route("PUT", path, **doc)

    def delete(self, path: str, **doc: Any):
        return self.route("DELETE", path, **doc)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.pattern.pattern[1:-1]}" for r in self.routes]

    async def fetch(self, request: web.Request, env: Any, ctx: Any) -> web.StreamResponse:
        allowed: list[str] = []
        for route in self.routes:
            match = route.pattern.match(request.path)
            if not match:
                continue
            if route.method != request.method:
                allowed.append(route.method)
                continue
            try:
                result = await route.handler(request, env, ctx, **match.groupdict())
            except EdgeIndexError as exc:
                if exc.status >= 500:
                    log.exception("%s %s failed", request.method, request.path)
                return error_response(exc)
            if isinstance(result, web.StreamResponse):
                return result
            return json_response(result)
        if allowed:
            return json_response({"error": "method_not_allowed", "message": f"use {', '.join(allowed)}"}, 405)
        return json_response({"error": "not_found", "message": f"no route for {request.method} {request.path}"}, 404)
