"""OpenAPI 3.1 for a worker, generated from its routes and their pydantic models.

Each route registered with ``summary=``, ``request=``, ``query=``, ``response=`` (see
``Routes.route``) becomes an operation; the JSON Schemas come from pydantic, the same
models that validate the requests, so the spec cannot drift from the validation.
The docs page is Swagger UI from the ``swagger-ui-py`` package's static files: no
network at run time.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic.json_schema import models_json_schema

from .. import api_models
from .http import Route, Routes

OPENAPI_VERSION = "3.1.0"
REF = "#/components/schemas/{model}"
_PARAM = re.compile(r"\{(\w+)\}")
_SAFE_ASSET = re.compile(r"^[A-Za-z0-9_.-]+$")

# Routes every worker serves beside its own (runtime/server.py).
BUILTIN: list[Route] = [
    Route("GET", "/health", re.compile("^/health$"), None, summary="The worker's name, bindings, vars and routes",
          response=api_models.Health, auth=None),
    Route("GET", "/openapi.json", re.compile("^/openapi.json$"), None, summary="This OpenAPI document", auth=None),
    Route("GET", "/docs", re.compile("^/docs$"), None, summary="Readable API docs (Swagger UI, served locally)",
          auth=None, body_types=(), extra={"responses": {"200": {"description": "HTML page",
                                                                  "content": {"text/html": {}}}}}),
]


def build_spec(routes: Routes, *, title: str, version: str = "0.1.0", description: str = "",
               server_url: str = "/", builtin: bool = True) -> dict[str, Any]:
    """``server_url``: where clients reach the worker, relative by default (the spec's own location):
    never derived from a request, whose Host header the client chooses."""
    everything = [*(BUILTIN if builtin else []), *routes.routes]
    wanted = []
    for route in everything:
        if route.request is not None:
            wanted.append((route.request, "validation"))
        if route.response is not None:
            wanted.append((route.response, "serialization"))
    wanted.append((api_models.ErrorBody, "serialization"))
    wanted = list(dict.fromkeys(wanted))
    refs, schema = models_json_schema(wanted, ref_template=REF)
    components = schema.get("$defs", {})

    def ref(model: type, mode: str) -> dict:
        return refs[(model, mode)]

    paths: dict[str, dict] = {}
    for route in everything:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, ref)
    spec: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": version, "description": description},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "an API key (ei_...) or, on admin routes, the admin key"},
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
    }
    spec["servers"] = [{"url": server_url}]
    return spec


def _operation(route: Route, ref) -> dict[str, Any]:
    name = route.handler.__name__ if route.handler is not None else route.path.strip("/").replace(".", "_") or "root"
    op: dict[str, Any] = {"operationId": f"{route.method.lower()}_{name}", "summary": route.summary}
    doc = (route.handler.__doc__ or "").strip() if route.handler is not None else ""
    if doc and doc != route.summary:
        op["description"] = doc
    params = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}}
              for p in _PARAM.findall(route.path)]
    if route.query is not None:
        params.extend(_query_parameters(route.query))
    if params:
        op["parameters"] = params
    if route.request is not None:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": ref(route.request, "validation")}}}
    elif route.body_types:
        op["requestBody"] = {"required": True, "content": {
            t: {"schema": {"type": "string", "contentMediaType": t}} for t in route.body_types}}
    ok: dict[str, Any] = {"description": "OK" if route.status < 300 else "Accepted" if route.status == 202 else "Created"}
    if route.response is not None:
        ok["content"] = {"application/json": {"schema": ref(route.response, "serialization")}}
    elif route.path == "/openapi.json":
        ok["content"] = {"application/json": {"schema": {"type": "object"}}}
    responses = {str(route.status): ok}
    error = {"description": "error: {error, message, field}",
             "content": {"application/json": {"schema": ref(api_models.ErrorBody, "serialization")}}}
    if route.auth is not None or route.request is not None or route.query is not None or params:
        responses["default"] = error
    op["responses"] = responses
    if route.auth is not None:
        op["security"] = [{"bearer": []}, {"apiKeyHeader": []}]
        op["tags"] = ["admin"] if route.auth == "admin" else ["api"]
    op.update({k: v for k, v in route.extra.items() if k != "responses"})
    if "responses" in route.extra:
        op["responses"] = route.extra["responses"]
    return op


def _query_parameters(model: type) -> list[dict]:
    """A flat model's fields as query parameters; lists travel comma-separated (``tags=a,b``)."""
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if _is_array(prop):
            param.update(style="form", explode=False)
        if "description" in prop:
            param["description"] = prop["description"]
        params.append(param)
    return params


def _is_array(prop: dict) -> bool:
    return prop.get("type") == "array" or any(p.get("type") == "array" for p in prop.get("anyOf", []))


# --- serving ----------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _assets() -> Path:
    return Path(str(resources.files("swagger_ui"))) / "static"


DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="docs/swagger-ui.css"><link rel="icon" href="docs/favicon-32x32.png"></head>
<body><div id="ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({{url: "openapi.json", dom_id: "#ui", deepLinking: true,
  persistAuthorization: true, tryItOutEnabled: false}});</script>
</body></html>
"""


def attach(app: web.Application, build: Callable[[], dict[str, Any]]) -> None:
    """``GET /openapi.json``, ``GET /docs`` and the page's assets on an aiohttp app.

    ``build()`` makes the spec, once: it is the same for every request, and nothing of a request
    goes into it."""
    cache: dict[str, str] = {}

    async def openapi_json(request: web.Request) -> web.Response:
        if "spec" not in cache:
            cache["spec"] = json.dumps(build())
        return web.Response(text=cache["spec"], content_type="application/json")

    async def docs(request: web.Request) -> web.Response:
        title = "edgeindex API"
        return web.Response(text=DOCS_PAGE.format(title=title), content_type="text/html")

    async def asset(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        path = _assets() / name
        if not _SAFE_ASSET.match(name) or not path.is_file():
            raise web.HTTPNotFound(text=json.dumps({"error": "not_found", "message": f"no docs asset {name!r}"}),
                                   content_type="application/json")
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return web.FileResponse(path, headers={"Content-Type": kind, "Cache-Control": "max-age=86400"})

    app.router.add_get("/openapi.json", openapi_json)
    app.router.add_get("/docs", docs)
    app.router.add_get("/docs/{name}", asset)
