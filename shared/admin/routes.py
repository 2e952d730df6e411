"""The admin page's routes, registered on the upload worker's ``routes`` (``register``).

The page (``GET /admin``) and its script and style are static files of this package: they hold no
data and need no key. Everything the page shows comes from JSON routes authorised by the admin key
the operator signs in with, sent as ``Authorization`` by the script (kept in sessionStorage, never in
a URL). The page's own JSON routes are under ``/admin/api/``; the rest are the existing tenancy,
upload and status routes.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from aiohttp import web

from .. import api_models as out
from ..errors import NotFound
from ..runtime.http import Routes, json_response, read_json
from ..search.request import SearchRequest
from ..validation import parse
from .models import Dropped, DropRequest, ModelJob, ModelJobRequest, ModelsStatus, Overview, TelemetryReport

# name → media type: only these files are served, whatever the path asks for.
ASSETS = {"admin.js": "text/javascript", "admin.css": "text/css"}
# The page runs only its own script and style, talks only to this origin, and cannot be framed.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
MAX_SEARCH_BODY = 1_000_000


@cache
def asset(name: str) -> bytes:
    return (resources.files(__package__) / "static" / name).read_bytes()


def _static(name: str, media_type: str) -> web.Response:
    return web.Response(body=asset(name), content_type=media_type, charset="utf-8", headers=SECURITY_HEADERS)


def register(routes: Routes) -> None:
    """Add the page and its JSON routes to a worker whose services have ``tenancy`` and ``admin``."""

    @routes.get("/admin", summary="The admin page (static HTML; sign in with the admin key)", auth=None,
                extra={"responses": {"200": {"description": "HTML page", "content": {"text/html": {}}}}})
    async def admin_page(request, services, ctx):
        return _static("index.html", "text/html")

    @routes.get("/admin/assets/{name}", summary="The admin page's script and style", auth=None,
                extra={"responses": {
                    "200": {"description": "script or style",
                            "content": {"text/javascript": {}, "text/css": {}}},
                    "default": {"description": "error: {error, message, field}", "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}}})
    async def admin_asset(request, services, ctx, name):
        if name not in ASSETS:
            raise NotFound(f"no admin asset {name!r}", field="name")
        return _static(name, ASSETS[name])

    @routes.get("/admin/api/overview", summary="Every tenant with its documents by status and its active keys",
                response=Overview, auth="admin")
    async def admin_overview(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        return await services.admin.overview()

    @routes.get("/admin/api/models",
                summary="Embedding models: the serving one, and each other model's vectors beside it "
                        "(edgeindex models backfill) with how many of its chunks they cover",
                response=ModelsStatus, auth="admin")
    async def admin_models(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        return await services.admin.models()

    @routes.post("/admin/api/models/jobs",
                 summary="Queue a model change for an ingest worker: backfill another model's vectors, migrate "
                         "(backfill, then cut over), cut over, or roll back; 409 while another job is queued or "
                         "running. Its progress is in GET /admin/api/models",
                 request=ModelJobRequest, response=ModelJob, status=202, auth="admin")
    async def admin_model_job(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        body = parse(ModelJobRequest, await read_json(request))
        return json_response(await services.admin.model_job(body.action, body.model, body.duty, body.entity_ids),
                             202)

    @routes.post("/admin/api/models/jobs/{id}/stop",
                 summary="Stop a model job: a queued one at once, a running backfill after the batch in hand "
                         "(what it stored stays; a new job goes on from there)",
                 response=ModelJob, auth="admin")
    async def admin_stop_model_job(request, services, ctx, id):
        await services.tenancy.require_admin(request.headers)
        return await services.admin.stop_model_job(id)

    @routes.post("/admin/api/models/drop",
                 summary="Delete a model's vectors kept beside the serving one (after a cutover: the old model's, "
                         "which a rollback would serve again)",
                 request=DropRequest, response=Dropped, auth="admin")
    async def admin_drop_model(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        body = parse(DropRequest, await read_json(request))
        return await services.admin.drop_model(body.model)

    @routes.post("/admin/api/search",
                 summary="Search through this worker (the admin page's playground): the body goes to the search "
                         "worker's POST /search with the caller's key",
                 request=SearchRequest, response=out.SearchResponse, auth="admin")
    async def admin_search(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        body = await read_json(request, max_bytes=MAX_SEARCH_BODY)  # 400/413/415 here, as on /search
        status, payload, rid = await services.admin.search(json.dumps(body).encode(), request.headers)
        headers = {"X-Search-Request-Id": rid} if rid else None
        return web.Response(body=payload, status=status, content_type="application/json", headers=headers)

    @routes.get("/admin/api/telemetry",
                summary="The router's telemetry report; 404 (not_found) while the deployment has none",
                response=TelemetryReport, auth="admin")
    async def admin_telemetry(request, services, ctx):
        await services.tenancy.require_admin(request.headers)
        return json_response(await services.admin.telemetry())
