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


class Router:
    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern, Handler]] = []

    def route(self, method: str, path: str) -> Callable[[Handler], Handler]:
        pattern = re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", path) + "$")

        def register(handler: Handler) -> Handler:
            self._routes.append((method.upper(), pattern, handler))
            return handler

        return register

    def get(self, path: str):
        return self.route("GET", path)

    def post(self, path: str):
        return self.route("POST", path)

    def put(self, path: str):
        return self.route("PUT", path)

    def delete(self, path: str):
        return self.route("DELETE", path)

    def paths(self) -> list[str]:
        return [f"{m} {p.pattern[1:-1]}" for m, p, _ in self._routes]

    async def fetch(self, request: web.Request, env: Any, ctx: Any) -> web.StreamResponse:
        allowed: list[str] = []
        for method, pattern, handler in self._routes:
            match = pattern.match(request.path)
            if not match:
                continue
            if method != request.method:
                allowed.append(method)
                continue
            try:
                result = await handler(request, env, ctx, **match.groupdict())
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
