"""The HTTP boundary of every worker: routes, request bodies, and the one JSON error shape.

A worker declares ``routes = Routes()`` and decorates handlers; a handler gets
``(request, services, ctx, **path_params)`` — the typed services its worker built
at start-up, and ``ctx.wait_until`` for work that outlives the response — and returns an aiohttp response or a JSON-able value.

Every answer that is not a success is JSON ``{"error", "message", "field"?,
"request_id"}``: library errors with their status, aiohttp's own errors
(unknown route, body over the limit, a malformed request line or header) and
any unexpected exception, which becomes a 500 whose traceback goes to the log
under the same request id. Nothing reaches a client as a plain-text page.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import psycopg
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from psycopg_pool import PoolTimeout

from ..errors import (
    EdgeIndexError,
    ModelSwitching,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    UnsupportedMediaType,
    ValidationError,
)
from ..json_codec import check_text, decode_json_object, encode_json

log = logging.getLogger(__name__)
Handler = Callable[..., Awaitable[Any]]
_PARAM = re.compile(r"\{(\w+)\}")
REQUEST_ID_HEADER = "X-Request-Id"
REQUEST_ID = web.RequestKey("request_id", str) if hasattr(web, "RequestKey") else "request_id"


def json_response(body: Any, status: int = 200, *, headers: dict | None = None) -> web.Response:
    return json_bytes_response(encode_json(body), status, headers=headers)


def json_bytes_response(body: bytes, status: int = 200, *, headers: dict | None = None) -> web.Response:
    """A JSON body encoded already (``encode_json``'s bytes)."""
    return web.Response(body=body, status=status, content_type="application/json",
                        charset="utf-8", headers=headers)


def error_body(code: str, message: str, *, field: str | None = None, request_id: str | None = None) -> dict:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    if request_id:
        body["request_id"] = request_id
    return body


def new_request_id() -> str:
    return "req_" + secrets.token_hex(8)


def request_id(request: web.BaseRequest) -> str:
    """The request's id (made on first use): in every error body, the response header and the log."""
    try:
        return request[REQUEST_ID]
    except KeyError:
        rid = new_request_id()
        request[REQUEST_ID] = rid
        return rid


# --- bodies ----------------------------------------------------------------------------


async def read_body(request: web.BaseRequest, *, max_bytes: int, field: str = "body") -> bytes:
    """The whole body, whatever its framing (Content-Length or chunked), or a 413.

    The limit holds on the bytes actually read: a declared length can lie, a chunked body
    declares none, and a single ``read(n)`` only returns what happens to be buffered.
    """
    if request.content_length is not None and request.content_length > max_bytes:
        raise PayloadTooLarge(f"{field}: {request.content_length} bytes is more than the limit of {max_bytes} bytes",
                              field=field)
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"{field}: the body is more than the limit of {max_bytes} bytes", field=field)
        parts.append(chunk)
    data = b"".join(parts)
    if request.content_length is not None and len(data) != request.content_length:
        raise ValidationError(f"{field}: {len(data)} bytes arrived of the {request.content_length} declared "
                              "in Content-Length", field=field)
    return data


def _check_json_content_type(request: web.BaseRequest) -> None:
    raw = request.headers.get("Content-Type")
    if raw is None:
        return  # a client that says nothing is taken at its word that the body is JSON
    media = raw.partition(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"Content-Type {media!r}: this route takes application/json",
                                   field="Content-Type")


async def read_json(request: web.BaseRequest, *, max_bytes: int = 1_000_000) -> dict:
    """The body as a JSON object, or a 400/413/415 that says what is wrong."""
    return decode_json_object(await read_json_bytes(request, max_bytes=max_bytes))


async def read_json_bytes(request: web.BaseRequest, *, max_bytes: int = 1_000_000) -> bytes:
    """The body of a JSON route, not decoded yet (``decode_json_object`` does, with read_json's errors):
    for a service that can tell a body it has seen before from its bytes (search/request_memo.py)."""
    _check_json_content_type(request)
    return await read_body(request, max_bytes=max_bytes)


# --- routes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """A route and what the OpenAPI spec says about it (``edgeindex.runtime.openapi``)."""

    method: str
    path: str  # the template, e.g. /entities/{entity_id}/documents
    pattern: re.Pattern
    handler: Handler | None
    summary: str = ""
    request: type | None = None  # pydantic model of the JSON body
    query: type | None = None  # pydantic model of the query string
    response: type | None = None  # pydantic model of the success body
    status: int = 200
    body_types: tuple[str, ...] = ()  # a raw (non-JSON) body of these media types
    auth: str | None = "key"  # "key", "admin" or None (public)
    extra: dict = field(default_factory=dict)  # further OpenAPI operation fields


class Routes:
    """Method + path templates → handlers. Path parameters are matched on the raw (still
    percent-encoded) path and decoded afterwards, so an id may contain ``/`` as ``%2F``.

    ``route(..., summary=, request=, query=, response=, status=, body_types=, auth=)`` also
    documents the route: ``edgeindex.runtime.openapi`` builds the worker's spec from them."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(self, method: str, path: str, **doc: Any) -> Callable[[Handler], Handler]:
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
        return [f"{r.method} {r.path}" for r in self.routes]

    async def fetch(self, request: web.Request, services: Any, ctx: Any) -> web.StreamResponse:
        allowed: list[str] = []
        raw_path = request.rel_url.raw_path
        for route in self.routes:
            match = route.pattern.match(raw_path)
            if not match:
                continue
            if route.method != request.method:
                allowed.append(route.method)
                continue
            params = {}
            for name, value in match.groupdict().items():
                try:
                    params[name] = check_text(unquote(value, errors="strict"), name)
                except UnicodeDecodeError:
                    raise ValidationError(f"{name}: not valid UTF-8 once URL-decoded", field=name) from None
            try:
                result = await route.handler(request, services, ctx, **params)
            except psycopg.errors.ForeignKeyViolation as exc:
                raise missing_reference(exc, params) from None
            if isinstance(result, web.StreamResponse):
                return result
            return json_response(result)
        if allowed:
            raise MethodNotAllowed(f"{request.method} is not allowed on {request.path}; use {', '.join(allowed)}",
                                   allowed=allowed)
        raise RouteNotFound(f"no route for {request.method} {request.path}")


_FOREIGN_KEY = re.compile(r'^Key \((?P<column>[^)]+)\)=\((?P<value>.*)\) is not present in table "(?P<table>[^"]+)"')


def missing_reference(exc: psycopg.errors.ForeignKeyViolation, params: dict[str, str]) -> NotFound:
    """A write that names a row that does not exist (an admin key registering tools for a missing
    entity): a 404 naming the request's field that holds the value (the path parameter, else the
    column)."""
    found = _FOREIGN_KEY.match(exc.diag.message_detail or "")
    if found is None:
        return NotFound("the request refers to something that does not exist")
    column, value, table = found["column"], found["value"], found["table"]
    field = next((name for name, given in params.items() if given == value), column)
    noun = {"entities": "entity"}.get(table, table)
    return NotFound(f"{field}: no {noun} {value!r}", field=field)


class RouteNotFound(EdgeIndexError):
    code = "not_found"
    status = 404


class MethodNotAllowed(EdgeIndexError):
    code = "method_not_allowed"
    status = 405

    def __init__(self, message: str, *, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


# --- the error boundary ----------------------------------------------------------------


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as JSON with the request id; unexpected ones logged with their traceback."""
    rid = request_id(request)
    try:
        response = await handler(request)
    except EdgeIndexError as exc:
        if exc.status >= 500:
            log.exception("%s %s failed [%s]", request.method, loggable_path(request.path), rid)
        headers = None
        if isinstance(exc, MethodNotAllowed):
            headers = {"Allow": ", ".join(exc.allowed)}
        elif isinstance(exc, RateLimited | ModelSwitching):
            headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
        response = json_response(error_body(exc.code, exc.message, field=exc.field, request_id=rid),
                                 exc.status, headers=headers)
    except web.HTTPException as exc:  # aiohttp's own: 413 over client_max_size, 404 of its router, ...
        if exc.status < 400:
            raise
        response = json_response(error_body(_code_for(exc.status), exc.reason or exc.text or "", request_id=rid),
                                 exc.status)
    except (psycopg.OperationalError, PoolTimeout) as exc:
        # The database is restarting or out of reach (chaos: restart-db): a transient 503 the client
        # may retry (the SDK does, honouring Retry-After), not a 500 that reads like a bug.
        log.warning("%s %s: database unavailable [%s]: %s", request.method, loggable_path(request.path), rid,
                    type(exc).__name__)
        response = json_response(error_body("unavailable", "the database is unavailable for a moment; retry",
                                            request_id=rid), 503, headers={"Retry-After": "1"})
    except Exception:
        log.exception("%s %s: unexpected error [%s]", request.method, loggable_path(request.path), rid)
        response = json_response(error_body("internal", "unexpected error; the log has the details under "
                                            "this request id", request_id=rid), 500)
    response.headers[REQUEST_ID_HEADER] = rid
    return response


_SECRET_PATH = re.compile(r"^(/uploads/)[^/]+")


def loggable_path(path: str) -> str:
    """A path fit for the log: an upload URL's token is a credential, like a presigned signature."""
    return _SECRET_PATH.sub(r"\1<token>", path)


def _code_for(status: int) -> str:
    return {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
            405: "method_not_allowed", 408: "timeout", 413: "payload_too_large", 414: "uri_too_long",
            415: "unsupported_media_type", 429: "rate_limited", 431: "headers_too_large"}.get(
        status, "internal" if status >= 500 else "invalid_request")


class JSONErrorRequestHandler(RequestHandler):
    """aiohttp answers requests it cannot even parse (a bad request line, an oversized header, a
    broken Content-Length) before any middleware runs, as plain text: give them our JSON shape."""

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        plain = super().handle_error(request, status, exc, message)  # logs, and checks nothing was sent
        reason = message or (str(exc) if exc else "") or "the request could not be read"
        rid = new_request_id()
        response = json_response(error_body(_code_for(status), reason.splitlines()[0][:300], request_id=rid),
                                 plain.status)
        response.headers[REQUEST_ID_HEADER] = rid
        response.force_close()
        return response


class JSONErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        return JSONErrorRequestHandler(self, loop=self._loop, **self._kwargs)
