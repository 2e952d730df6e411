"""Upload worker: presigned uploads, direct uploads, document status, tenancy admin."""

from __future__ import annotations

import os

from edgeindex import tenancy
from edgeindex.ingest import uploads
from edgeindex import api_models as out
from edgeindex.ingest.requests import (CompleteRequest, DirectUploadQuery, EntityRequest, KeyRequest, ListQuery,
                                       UploadRequest, check_size, parse)
from edgeindex.runtime.router import Router, json_response, read_json

router = Router()


async def startup(env) -> None:
    if secret := os.environ.get("EDGEINDEX_ADMIN_KEY"):
        await tenancy.ensure_admin_key(env.DB, secret)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)


async def _grant(request, env, entity_id: str) -> None:
    principal = await tenancy.authenticate(env.DB, request.headers)
    principal.check([entity_id], field="entity_id")


# --- tenancy admin -----------------------------------------------------------------


@router.post("/admin/entities", summary="Create a tenant (user, group, network or community)",
             request=EntityRequest, response=out.Entity, status=201, auth="admin")
async def create_entity(request, env, ctx):
    await tenancy.require_admin(env.DB, request.headers)
    body = parse(EntityRequest, await read_json(request))
    entity = await tenancy.create_entity(env.DB, id=body.id, kind=body.kind, name=body.name)
    return json_response(entity, 201)


@router.get("/admin/entities", summary="List tenants", response=out.EntityList, auth="admin")
async def list_entities(request, env, ctx):
    await tenancy.require_admin(env.DB, request.headers)
    return {"entities": await tenancy.list_entities(env.DB)}


@router.post("/admin/keys", summary="Create an API key granted some entities (the secret is shown once)",
             request=KeyRequest, response=out.CreatedKey, status=201, auth="admin")
async def create_key(request, env, ctx):
    await tenancy.require_admin(env.DB, request.headers)
    body = parse(KeyRequest, await read_json(request))
    key = await tenancy.create_key(env.DB, name=body.name, entity_ids=list(body.entity_ids), is_admin=body.admin)
    return json_response(key, 201)


@router.get("/admin/keys", summary="List API keys (never their secrets)", response=out.KeyList, auth="admin")
async def list_keys(request, env, ctx):
    await tenancy.require_admin(env.DB, request.headers)
    return {"keys": await tenancy.list_keys(env.DB)}


@router.delete("/admin/keys/{key_id}", summary="Revoke an API key", response=out.RevokedKey, auth="admin")
async def revoke_key(request, env, ctx, key_id):
    await tenancy.require_admin(env.DB, request.headers)
    await tenancy.revoke_key(env.DB, key_id)
    return {"id": key_id, "revoked": True}


# --- uploads and documents ------------------------------------------------------------


@router.post("/entities/{entity_id}/uploads",
             summary="Ask for a presigned PUT (or a multipart upload with presigned parts) for a new document version",
             request=UploadRequest, response=out.UploadTicket, status=201)
async def request_upload(request, env, ctx, entity_id):
    await _grant(request, env, entity_id)
    body = await read_json(request)
    answer = await uploads.request_upload(env, entity_id, body, base_url=f"{request.scheme}://{request.host}")
    return json_response(answer, 201)


@router.post("/entities/{entity_id}/uploads/{document_id}/complete", summary="Complete a multipart upload",
             request=CompleteRequest, response=out.CompletedUpload)
async def complete_upload(request, env, ctx, entity_id, document_id):
    await _grant(request, env, entity_id)
    return await uploads.complete_upload(env, entity_id, document_id, await read_json(request))


@router.put("/entities/{entity_id}/documents/{document_id}",
            summary="Upload a small document's bytes directly (202; 200 with unchanged=true when skip_unchanged found the same bytes)",
            query=DirectUploadQuery, response=out.Document, status=202,
            body_types=("text/plain", "text/markdown", "text/html", "application/pdf", "application/json"))
async def direct_upload(request, env, ctx, entity_id, document_id):
    await _grant(request, env, entity_id)
    limit = env.var("MAX_UPLOAD_BYTES", int)
    if request.content_length is not None:
        check_size(request.content_length, limit, field="body")
    data = await request.content.read(limit + 1)  # one byte more tells "too large" from "exactly the limit"
    answer, created = await uploads.direct_upload(env, entity_id, document_id, data,
                                                  raw_content_type=request.headers.get("Content-Type"),
                                                  query=dict(request.query))
    return json_response(answer if created else {**answer, "unchanged": True}, 202 if created else 200)


@router.get("/entities/{entity_id}/documents", summary="List an entity's documents with their status, by id",
            query=ListQuery, response=out.DocumentList)
async def list_documents(request, env, ctx, entity_id):
    await _grant(request, env, entity_id)
    return await uploads.list_documents(env, entity_id, dict(request.query))


@router.get("/entities/{entity_id}/documents/{document_id}",
            summary="A document's status: pending, processing (step), ready or failed (error)", response=out.Document)
async def get_document(request, env, ctx, entity_id, document_id):
    await _grant(request, env, entity_id)
    return await uploads.get_document(env, entity_id, document_id)


@router.delete("/entities/{entity_id}/documents/{document_id}",
               summary="Delete a document, its chunks and objects; invalidate cached results holding them",
               response=out.DeletedDocument)
async def delete_document(request, env, ctx, entity_id, document_id):
    await _grant(request, env, entity_id)
    return await uploads.delete_document(env, entity_id, document_id)
