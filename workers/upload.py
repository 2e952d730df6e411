"""Upload worker: presigned uploads, direct uploads, document status, tenancy admin, the admin page."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from edgeindex import api_models as out
from edgeindex.admin import routes as admin_routes
from edgeindex.admin.service import AdminService, search_url
from edgeindex.errors import ConfigError
from edgeindex.history.retention import Retention, RetentionRequest
from edgeindex.history.service import ChangesQuery, HistoryService
from edgeindex.json_codec import check_json_value
from edgeindex.runtime.http import Routes, json_response, read_body, read_json
from edgeindex.tenancy import EntityRequest, KeyRequest, Tenancy
from edgeindex.uploads import bulk
from edgeindex.uploads.models import (
    CompleteRequest,
    DirectUploadQuery,
    ListQuery,
    UploadRequest,
    check_size,
)
from edgeindex.uploads.service import UploadLimits, UploadService
from edgeindex.uploads.signed_urls import UploadSigner
from edgeindex.validation import document_id as valid_document_id
from edgeindex.validation import parse
from edgeindex.workers._startup import tenancy as startup_tenancy

routes = Routes()
log = logging.getLogger(__name__)
admin_routes.register(routes)  # GET /admin, its assets, /admin/api/*


@dataclass(frozen=True)
class Services:
    tenancy: Tenancy
    uploads: UploadService
    background: set[asyncio.Task]
    admin: AdminService
    history: HistoryService


async def startup(env) -> Services:
    tenancy = startup_tenancy(env)
    if secret := env.secrets.get("ADMIN_KEY"):
        await tenancy.ensure_admin_key(secret)
    limits = UploadLimits(
        max_bytes=env.var("MAX_UPLOAD_BYTES", int),
        multipart_threshold=env.var("MULTIPART_THRESHOLD_BYTES", int),
        part_bytes=env.var("MULTIPART_PART_BYTES", int),
        allowed_types=[t.strip().lower() for t in env.var("ALLOWED_TYPES").split(",") if t.strip()],
        presign_expires=env.BUCKET.presign_expires)
    signer = None
    if env.config.services.s3.uploads == "worker":
        secret = env.secrets.get("UPLOAD_SIGNING_KEY") or env.secrets.get("ADMIN_KEY")
        if not secret:
            raise ConfigError("uploads through the worker need EDGEINDEX_UPLOAD_SIGNING_KEY (or EDGEINDEX_ADMIN_KEY)",
                              key="services.s3.uploads")
        signer = UploadSigner(secret)
    uploads = UploadService(db=env.DB, bucket=env.BUCKET, kv=env.KV, limits=limits, signer=signer)
    admin = AdminService(db=env.DB, search_url=search_url(env))
    services = Services(tenancy, uploads, set(), admin, HistoryService(db=env.DB, retention=Retention.of(env)))
    if every := env.var("UPLOAD_SWEEP_SECONDS", float):
        services.background.add(asyncio.create_task(_sweep(services, every=every)))
    return services


async def _sweep(services: Services, *, every: float) -> None:
    """Pending versions whose upload URL expired unused are failed with the reason, and history older
    than its retention's age bound is dropped (every process may run this: the statements skip rows
    another one holds, and a second prune finds nothing)."""
    while True:
        for what, sweep in (("expiring unused uploads", services.uploads.expire_uploads),
                            ("pruning document history", services.history.prune)):
            try:
                await sweep()
            except Exception:
                log.warning("%s failed; next round retries", what, exc_info=True)
        await asyncio.sleep(every)


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


async def _grant(request, services: Services, entity_id: str) -> None:
    principal = await services.tenancy.authenticate(request.headers)
    principal.check([entity_id], field="entity_id")


# --- tenancy admin -----------------------------------------------------------------


@routes.post("/admin/entities", summary="Create a tenant (user, group, network or community)",
             request=EntityRequest, response=out.Entity, status=201, auth="admin")
async def create_entity(request, services: Services, ctx):
    await services.tenancy.require_admin(request.headers)
    body = parse(EntityRequest, await read_json(request))
    return json_response(await services.tenancy.create_entity(id=body.id, kind=body.kind, name=body.name), 201)


@routes.get("/admin/entities", summary="List tenants", response=out.EntityList, auth="admin")
async def list_entities(request, services: Services, ctx):
    await services.tenancy.require_admin(request.headers)
    return {"entities": await services.tenancy.list_entities()}


@routes.post("/admin/keys", summary="Create an API key granted some entities (the secret is shown once)",
             request=KeyRequest, response=out.CreatedKey, status=201, auth="admin")
async def create_key(request, services: Services, ctx):
    await services.tenancy.require_admin(request.headers)
    body = parse(KeyRequest, await read_json(request))
    key = await services.tenancy.create_key(name=body.name, entity_ids=list(body.entity_ids), is_admin=body.admin)
    return json_response(key, 201)


@routes.get("/admin/keys", summary="List API keys (never their secrets)", response=out.KeyList, auth="admin")
async def list_keys(request, services: Services, ctx):
    await services.tenancy.require_admin(request.headers)
    return {"keys": await services.tenancy.list_keys()}


@routes.delete("/admin/keys/{key_id}", summary="Revoke an API key", response=out.RevokedKey, auth="admin")
async def revoke_key(request, services: Services, ctx, key_id):
    await services.tenancy.require_admin(request.headers)
    await services.tenancy.revoke_key(key_id)
    return {"id": key_id, "revoked": True}


# --- uploads and documents ------------------------------------------------------------


@routes.post("/entities/{entity_id}/uploads",
             summary="Ask for a presigned PUT (or a multipart upload with presigned parts) for a new document version",
             request=UploadRequest, response=out.UploadTicket, status=201)
async def request_upload(request, services: Services, ctx, entity_id):
    await _grant(request, services, entity_id)
    answer = await services.uploads.request_upload(entity_id, await read_json(request),
                                                   base_url=f"{request.scheme}://{request.host}")
    return json_response(answer, 201)


@routes.post("/entities/{entity_id}/uploads/{document_id}/complete", summary="Complete a multipart upload",
             request=CompleteRequest, response=out.CompletedUpload)
async def complete_upload(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    document_id = valid_document_id(document_id)
    return await services.uploads.complete_upload(entity_id, document_id, await read_json(request))


@routes.put("/entities/{entity_id}/documents/{document_id}",
            summary="Upload a small document's bytes directly (202; 200 with unchanged=true when skip_unchanged found the same bytes)",
            query=DirectUploadQuery, response=out.Document, status=202,
            body_types=("text/plain", "text/markdown", "text/html", "application/pdf", "application/json"))
async def direct_upload(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    document_id = valid_document_id(document_id)
    limit = services.uploads.limits.max_bytes
    if request.content_length is not None:
        check_size(request.content_length, limit, field="body")
    data = await read_body(request, max_bytes=limit)
    answer, created = await services.uploads.direct_upload(entity_id, document_id, data,
                                                           raw_content_type=request.headers.get("Content-Type"),
                                                           query=dict(request.query))
    return json_response(answer if created else {**answer, "unchanged": True}, 202 if created else 200)


@routes.post("/entities/{entity_id}/documents/{document_id}/retry",
             summary="Ingest a failed document's bytes again, as its next version (409 unless it is failed "
                     "and its bytes arrived)", response=out.Document, status=202)
async def retry_document(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    document_id = valid_document_id(document_id)
    return json_response(await services.uploads.retry_document(entity_id, document_id), 202)


@routes.post("/entities/{entity_id}/documents",
             summary="Upload many small documents in one request (NDJSON, one document per line); a result per line",
             response=out.BulkUploadResult, body_types=bulk.MEDIA_TYPES,
             extra={"requestBody": {"required": True, "description": "One BulkDocument (JSON object) per line",
                                    "content": {t: {"schema": {"type": "string", "contentMediaType": t},
                                                    "x-line-schema": bulk.BulkDocument.model_json_schema()}
                                                for t in bulk.MEDIA_TYPES}}})
async def bulk_upload(request, services: Services, ctx, entity_id):
    """Each line is stored as its own document version through the direct-upload path and ingested
    on its own; a bad line is reported in its result and does not stop the others."""
    await _grant(request, services, entity_id)
    bulk.check_media_type(request.headers.get("Content-Type"))
    data = await read_body(request, max_bytes=bulk.MAX_BULK_BYTES)
    return await bulk.bulk_upload(services.uploads, entity_id, data, check_json=check_json_value)


@routes.put("/uploads/{token}", summary="Receive the bytes of an upload URL this worker handed out (embedded mode)",
            response=out.ReceivedUpload, auth=None,
            body_types=("text/plain", "text/markdown", "text/html", "application/pdf", "application/json",
                        "application/octet-stream"))
async def receive_upload(request, services: Services, ctx, token):
    """The upload URLs this worker hands out (services.s3.uploads = "worker"): the token is the credential."""
    grant = services.uploads.verify_upload(token, content_type=request.headers.get("Content-Type"),
                                           length=request.content_length)
    etag = await services.uploads.receive_upload(grant, await read_body(request, max_bytes=grant.size))
    return json_response({"etag": etag}, headers={"ETag": f'"{etag}"'})


@routes.get("/entities/{entity_id}/documents", summary="List an entity's documents with their status, by id",
            query=ListQuery, response=out.DocumentList)
async def list_documents(request, services: Services, ctx, entity_id):
    await _grant(request, services, entity_id)
    return await services.uploads.list_documents(entity_id, dict(request.query))


@routes.get("/entities/{entity_id}/documents/{document_id}",
            summary="A document's status: pending, processing (step), ready or failed (error)", response=out.Document)
async def get_document(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    document_id = valid_document_id(document_id)
    return await services.uploads.get_document(entity_id, document_id)


@routes.delete("/entities/{entity_id}/documents/{document_id}",
               summary="Delete a document, its chunks and objects; invalidate cached results holding them",
               response=out.DeletedDocument)
async def delete_document(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    document_id = valid_document_id(document_id)
    return await services.uploads.delete_document(entity_id, document_id)


# --- document history --------------------------------------------------------------


@routes.get("/entities/{entity_id}/documents/{document_id}/versions",
            summary="A document's retained versions: when each was live, how many chunks it held",
            response=out.DocumentVersions)
async def document_versions(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    return await services.history.versions(entity_id, valid_document_id(document_id))


@routes.get("/entities/{entity_id}/documents/{document_id}/changes",
            summary="What changed in a document since a version or time: chunks added, removed and changed, "
                    "with their text", query=ChangesQuery, response=out.DocumentChanges)
async def document_changes(request, services: Services, ctx, entity_id, document_id):
    await _grant(request, services, entity_id)
    return await services.history.changes(entity_id, valid_document_id(document_id), dict(request.query))


@routes.get("/entities/{entity_id}/history", summary="How much document history an entity keeps",
            response=out.HistoryRetention)
async def history_retention(request, services: Services, ctx, entity_id):
    await _grant(request, services, entity_id)
    return await services.history.retention_of(entity_id)


@routes.put("/entities/{entity_id}/history",
            summary="Set an entity's own history retention (null: the deployment's); applied at once",
            request=RetentionRequest, response=out.HistoryRetention, auth="admin")
async def set_history_retention(request, services: Services, ctx, entity_id):
    await services.tenancy.require_admin(request.headers)
    return await services.history.set_retention(entity_id, await read_json(request))
