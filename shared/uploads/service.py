"""The upload worker's service: upload requests, direct uploads, status, deletion.

An upload writes a ``pending`` row (a new document, or the next version of an
existing one) and hands out where to put the bytes; the bucket's object-created
event then starts ingestion. Deletion removes objects, rows and every cached
result that held one of the document's chunks.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg.types.json import Jsonb

from .. import holds, sqlfiles
from .. import object_keys as keys
from ..bindings.bucket import Bucket
from ..bindings.database import Database
from ..bindings.kv import KV
from ..cache import Invalidation
from ..errors import BindingError, Conflict, NotFound, ObjectStoreError, ValidationError
from ..validation import content_hash, parse
from .models import (
    CompleteRequest,
    DirectUploadQuery,
    DocumentFields,
    ListQuery,
    UploadRequest,
    check_size,
    content_type,
)
from .signed_urls import UploadGrant, UploadSigner

log = logging.getLogger(__name__)
SQL = sqlfiles.load("documents.sql")


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int
    multipart_threshold: int
    part_bytes: int
    allowed_types: list[str]
    presign_expires: int


def version_row(entity_id: str, document_id: str, fields: DocumentFields, *, media_type: str, size_bytes: int,
                metadata: dict | None) -> dict:
    """``create_or_bump``'s parameters for a document's next version (direct, presigned and bulk uploads)."""
    return {"entity_id": entity_id, "document_id": document_id, "title": fields.title, "source": fields.source,
            "tags": fields.tags, "collection": fields.collection,
            "metadata": Jsonb(metadata) if metadata is not None else None,
            "content_type": media_type, "size_bytes": size_bytes,
            "filename": keys.safe_filename(fields.filename or document_id)}


def _json_ready(row: dict) -> dict:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items()}


class UploadService:
    """What the upload worker does, given its bindings once at start-up."""

    def __init__(self, *, db: Database, bucket: Bucket, kv: KV, limits: UploadLimits,
                 signer: UploadSigner | None = None) -> None:
        """``signer``: hand out upload URLs of this worker (``signed_urls``) instead of the store's."""
        self.db = db
        self.bucket = bucket
        self.kv = kv
        self.limits = limits
        self.signer = signer

    def _upload_url(self, base_url: str, key: str, *, entity_id: str, document_id: str, version: int,
                    media_type: str, size: int, upload_id: str | None = None,
                    part_number: int | None = None) -> str:
        if self.signer is None:
            if part_number is not None:
                return self.bucket.presign_part(key, upload_id, part_number)
            return self.bucket.presign_put(key, content_type=media_type)
        grant = UploadGrant(entity_id=entity_id, document_id=document_id, version=version, object_key=key,
                            content_type=media_type, size=size, expires_at=int(time.time()) +
                            self.limits.presign_expires, upload_id=upload_id, part_number=part_number)
        return f"{base_url}/uploads/{self.signer.sign(grant)}"

    def verify_upload(self, token: str, *, content_type: str | None, length: int | None) -> UploadGrant:
        """The grant behind a worker upload URL (403 if forged, altered or expired; 400 if the size is off)."""
        if self.signer is None:
            raise NotFound("this deployment hands out the object store's own upload URLs", field="token")
        grant = self.signer.verify(token)
        self.signer.check_request(grant, content_type=content_type, length=length)
        return grant

    async def receive_upload(self, grant: UploadGrant, data: bytes) -> str:
        """Store the bytes a verified URL carries, if its version still waits for them; the ETag."""
        self.signer.check_request(grant, content_type=grant.content_type, length=len(data))
        row = await self.db.fetchone(SQL["pending_upload"], {"entity_id": grant.entity_id,
                                                            "document_id": grant.document_id})
        if row is None or row["version"] != grant.version or row["object_key"] != grant.object_key:
            raise Conflict("this upload URL's document version was replaced or deleted; request a new upload",
                           field="token")
        if row["status"] != "pending" or row["uploaded_at"] is not None or row["upload_id"] != grant.upload_id:
            raise Conflict(f"version {grant.version} no longer takes uploads (it is {row['status']}); "
                           "request a new upload to change the document", field="token")
        if grant.is_part:
            try:
                return await self.bucket.upload_part(grant.object_key, grant.upload_id, grant.part_number, data)
            except ObjectStoreError as exc:
                if exc.missing:  # aborted by a DELETE or a newer upload since the check above
                    raise Conflict("this upload URL's multipart upload was aborted (the document was deleted or "
                                   "replaced); request a new upload", field="token") from None
                raise
        await holds.point(self.db, "upload:stored-version", grant.entity_id, grant.document_id)
        info = await self.bucket.put(grant.object_key, data, content_type=grant.content_type)
        await self._confirm_stored(grant.entity_id, grant.document_id, grant.version, str(row["generation"]),
                                   grant.object_key)
        return info.etag

    async def _confirm_stored(self, entity_id: str, document_id: str, version: int, generation: str,
                              key: str) -> None:
        """Mark this version's bytes stored, or (a DELETE or a newer upload got in first) remove them and
        refuse: a concurrent write never leaves bytes no document points at, nor a 202 for a version
        that will not be ingested."""
        await holds.point(self.db, "upload:confirm", entity_id, document_id)
        where = {"entity_id": entity_id, "document_id": document_id, "version": version, "generation": generation}
        if await self.db.fetchone(SQL["confirm_upload"], where) is not None:
            return
        await self._refuse_stored(entity_id, document_id, version, generation, key)

    async def _refuse_stored(self, entity_id: str, document_id: str, version: int, generation: str,
                             key: str) -> None:
        """The confirmation found no row of this version and life: remove its bytes and raise Conflict."""
        # The key holds this life's generation, so it cannot be anyone else's object.
        await self.bucket.delete(key)
        now = await self.db.fetchone(SQL["pending_upload"], {"entity_id": entity_id, "document_id": document_id})
        if now is None or str(now["generation"]) != generation:
            log.info("upload of %s/%s v%d lost to a concurrent delete", entity_id, document_id, version)
            raise Conflict(f"document {document_id!r} was deleted while version {version} was being uploaded; "
                           "nothing was stored (upload it again to create the document anew)", field="document_id")
        log.info("upload of %s/%s v%d lost to version %d", entity_id, document_id, version, now["version"])
        raise Conflict(f"version {version} of document {document_id!r} was replaced by version {now['version']}, "
                       "uploaded at the same time, before its bytes were stored; nothing was stored for "
                       f"version {version}", field="document_id")

    async def _create_version(self, entity_id: str, document_id: str, fields: DocumentFields, *, media_type: str,
                              size_bytes: int, metadata: dict | None, upload_id_for=None,
                              expires: int | None = None) -> tuple[int, str, str | None, str]:
        """Insert or bump the document row and point it at its new object key:
        (version, object key, upload id, generation).

        ``upload_id_for(key)`` starts a multipart upload for the key when one is wanted."""
        params = version_row(entity_id, document_id, fields, media_type=media_type, size_bytes=size_bytes,
                             metadata=metadata)
        filename = params["filename"]
        try:
            async with self.db.transaction() as conn:
                cur = await conn.execute(SQL["create_or_bump"], params)
                row = await cur.fetchone()
                version, generation = row["version"], str(row["generation"])
                key = keys.object_key(entity_id, document_id, version, filename, generation)
                upload_id = await upload_id_for(key) if upload_id_for else None
                await conn.execute(SQL["set_object"], {"entity_id": entity_id, "document_id": document_id,
                                                       "version": version, "object_key": key, "upload_id": upload_id,
                                                       "expires": expires})
        except psycopg.errors.ForeignKeyViolation:
            raise NotFound(f"unknown entity {entity_id!r}", field="entity_id") from None
        return version, key, upload_id, generation

    async def request_upload(self, entity_id: str, body: dict, *, base_url: str) -> dict:
        """A presigned PUT (or a multipart upload with presigned parts) for a new document version."""
        limits = self.limits
        req = parse(UploadRequest, body)
        media_type = content_type(req.content_type, limits.allowed_types)
        check_size(req.size_bytes, limits.max_bytes)
        document_id = req.document_id or f"doc_{secrets.token_hex(8)}"
        multipart = req.multipart or req.size_bytes > limits.multipart_threshold
        bucket = self.bucket

        async def start_multipart(key: str) -> str:
            return await bucket.create_multipart(key, content_type=media_type)

        version, key, upload_id, _ = await self._create_version(entity_id, document_id, req, media_type=media_type,
                                                size_bytes=req.size_bytes, metadata=req.metadata,
                                                upload_id_for=start_multipart if multipart else None,
                                                expires=limits.presign_expires)
        answer: dict[str, Any] = {"document_id": document_id, "entity_id": entity_id, "version": version,
                                  "object_key": key, "status": "pending"}
        where = {"entity_id": entity_id, "document_id": document_id, "version": version}
        if multipart:
            count = max(1, math.ceil(req.size_bytes / limits.part_bytes))
            answer["multipart"] = {
                "upload_id": upload_id, "part_size": limits.part_bytes, "expires_in": limits.presign_expires,
                "parts": [{"part_number": n, "url": self._upload_url(
                    base_url, key, **where, media_type=media_type, size=limits.part_bytes, upload_id=upload_id,
                    part_number=n)} for n in range(1, count + 1)],
                "complete_url": f"{base_url}/entities/{quote(entity_id, safe='')}/uploads/"
                                f"{quote(document_id, safe='')}/complete",
            }
        else:
            answer["upload"] = {"method": "PUT", "url": self._upload_url(base_url, key, **where, media_type=media_type,
                                                                         size=req.size_bytes),
                                "headers": {"Content-Type": media_type}, "expires_in": limits.presign_expires}
        return answer

    async def complete_upload(self, entity_id: str, document_id: str, body: dict) -> dict:
        req = parse(CompleteRequest, body)
        row = await self.db.fetchone(SQL["pending_upload"], {"entity_id": entity_id, "document_id": document_id})
        if row is None:
            raise NotFound(f"no document {document_id!r} in entity {entity_id!r}", field="document_id")
        if row["upload_id"] != req.upload_id:
            raise Conflict(f"upload {req.upload_id!r} is not the multipart upload in progress for version "
                           f"{row['version']} of this document (already completed, or replaced by a newer upload)",
                           field="upload_id")
        parts = sorted((p.part_number, p.etag) for p in req.parts)
        where = {"entity_id": entity_id, "document_id": document_id, "version": row["version"]}
        try:
            info = await self.bucket.complete_multipart(row["object_key"], req.upload_id, parts)
        except ObjectStoreError as exc:
            raise ValidationError(f"parts: object storage refused to complete the upload: {exc.message}",
                                  field="parts") from None
        if info.size != row["size_bytes"]:
            # Fewer (or other) parts than were asked for: never ingest a partial document.
            await self.bucket.delete(row["object_key"])
            await self.db.execute(SQL["mark_upload_failed"], {
                **where, "error": f"the completed upload is {info.size} bytes; {row['size_bytes']} were declared"})
            raise ValidationError(f"parts: the completed object is {info.size} bytes but the upload declared "
                                  f"size_bytes {row['size_bytes']}; this version is failed, upload it again",
                                  field="parts")
        await self._confirm_stored(entity_id, document_id, row["version"], str(row["generation"]), row["object_key"])
        return {"document_id": document_id, "entity_id": entity_id, "version": row["version"], "status": "pending",
                "object_key": row["object_key"], "size_bytes": info.size}

    async def _keep_live_version(self, entity_id: str, document_id: str, digest: str, media_type: str,
                                 fields: DocumentFields) -> bool:
        """True if the live version already has these bytes; then only changed title/source/tags are written."""
        where = {"entity_id": entity_id, "document_id": document_id}
        async with Invalidation(self.kv) as invalidation:
            async with self.db.transaction() as conn:
                row = await (await conn.execute(SQL["live_version"], where)).fetchone()
                if row is None or (row["status"], row["ready_version"], row["content_hash"], row["content_type"]) != (
                        "ready", row["version"], digest, media_type):
                    return False
                changes = {name: value for name in ("title", "source", "tags", "collection")
                           if (value := getattr(fields, name)) is not None and value != row[name]}
                if changes:  # cached results show these fields: invalidate around the commit
                    chunk_ids = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], where)).fetchall()]
                    await invalidation.begin([entity_id], chunk_ids)
                    await conn.execute(SQL["update_fields"], {**where, "title": changes.get("title"),
                                                              "source": changes.get("source"),
                                                              "tags": changes.get("tags"),
                                                              "collection": changes.get("collection")})
        return True

    def check_direct(self, data: bytes, *, raw_content_type: str | None,
                     query: dict[str, str]) -> tuple[str, DirectUploadQuery]:
        """A direct upload's checks: (media type, fields), or the 4xx naming what is wrong."""
        media_type = content_type(raw_content_type, self.limits.allowed_types, field="Content-Type")
        fields = parse(DirectUploadQuery, {
            k: ([t for t in v.split(",") if t.strip()] if k == "tags" else v) for k, v in query.items()})
        if not data:
            raise ValidationError("body is empty: send the document's bytes", field="body")
        check_size(len(data), self.limits.max_bytes, field="body")
        return media_type, fields

    async def direct_upload(self, entity_id: str, document_id: str, data: bytes, *, raw_content_type: str | None,
                            query: dict[str, str]) -> tuple[dict, bool]:
        """Store a small body as the document's next version; ingestion follows from the bucket event.

        Returns (document, created): with ``skip_unchanged``, bytes identical to the live version
        create no version (``created`` False) and only update changed title/source/tags."""
        media_type, fields = self.check_direct(data, raw_content_type=raw_content_type, query=query)
        if fields.skip_unchanged and await self._keep_live_version(entity_id, document_id,
                                                              content_hash(data), media_type, fields):
            return await self.get_document(entity_id, document_id), False
        version, key, _, generation = await self._create_version(entity_id, document_id, fields,
                                                                 media_type=media_type, size_bytes=len(data),
                                                                 metadata=None)
        await self._store(entity_id, document_id, version, generation, key, data, media_type)
        return await self.get_document(entity_id, document_id), True

    async def _store(self, entity_id: str, document_id: str, version: int, generation: str, key: str, data: bytes,
                     media_type: str) -> None:
        """Write a new version's bytes under its key, check all of them arrived, and confirm the version
        (or refuse it, when a DELETE or a newer upload got in first: ``_confirm_stored``)."""
        where = {"entity_id": entity_id, "document_id": document_id, "version": version}
        await holds.point(self.db, "upload:stored-version", entity_id, document_id)
        await self.put_version(where, key, data, media_type)
        await self._confirm_stored(entity_id, document_id, version, generation, key)

    async def put_version(self, where: dict, key: str, data: bytes, media_type: str) -> None:
        """Store a version's bytes; if the store refuses, the version is failed (``mark_upload_failed``).

        No HEAD after the PUT to check the size: the PUT carries its Content-Length and a CRC32 of the
        body (botocore's default checksum), and the store refuses a body that does not match both, so
        a PUT that succeeded stored exactly ``data`` (never a cut document)."""
        try:
            await self.bucket.put(key, data, content_type=media_type)
        except Exception as exc:
            await self.db.execute(SQL["mark_upload_failed"], {**where, "error": f"object storage write failed: {exc}"})
            raise BindingError(f"object storage did not accept the upload: {exc}") from exc

    async def retry_document(self, entity_id: str, document_id: str) -> dict:
        """Ingest a failed document's bytes again, as its next version (the failed run stays failed; its
        version's bytes are copied, so whatever failed transiently — a model call, the database — runs
        anew on a fresh run). 409 if the document is not failed or its bytes never arrived."""
        where = {"entity_id": entity_id, "document_id": document_id}
        row = await self.db.fetchone(SQL["pending_upload"], where)
        if row is None:
            raise NotFound(f"no document {document_id!r} in entity {entity_id!r}", field="document_id")
        if row["status"] != "failed":
            raise Conflict(f"only a failed document can be retried; version {row['version']} is {row['status']}",
                           field="document_id")
        data = await self.bucket.get(row["object_key"]) if row["object_key"] else None
        if not data:
            raise Conflict(f"version {row['version']}'s bytes never arrived (or were lost): upload the document "
                           "again", field="document_id")
        doc = await self.get_document(entity_id, document_id)
        # Title, source, tags and metadata are kept by create_or_bump when not given (None).
        fields = DocumentFields.model_construct(filename=doc["filename"])
        version, key, _, generation = await self._create_version(
            entity_id, document_id, fields, media_type=row["content_type"], size_bytes=len(data), metadata=None)
        await self._store(entity_id, document_id, version, generation, key, data, row["content_type"])
        log.info("document %s/%s: failed version %d retried as version %d", entity_id, document_id,
                 row["version"], version)
        return await self.get_document(entity_id, document_id)

    async def expire_uploads(self, *, grace_seconds: float = 60.0) -> int:
        """Fail versions whose upload URL expired with nothing uploaded; abort their multipart uploads."""
        rows = await self.db.fetch(SQL["expire_uploads"], {"grace": grace_seconds})
        for row in rows:
            log.info("upload of %s/%s v%d expired", row["entity_id"], row["document_id"], row["version"])
            if row["upload_id"]:
                try:
                    await self.bucket.abort_multipart(row["object_key"], row["upload_id"])
                except ObjectStoreError:
                    log.info("multipart upload %s was already gone", row["upload_id"])
        return len(rows)

    async def get_document(self, entity_id: str, document_id: str) -> dict:
        row = await self.db.fetchone(SQL["get_document"], {"entity_id": entity_id, "document_id": document_id})
        if row is None:
            raise NotFound(f"no document {document_id!r} in entity {entity_id!r}", field="document_id")
        return _json_ready(row)

    async def list_documents(self, entity_id: str, query: dict[str, str]) -> dict:
        q = parse(ListQuery, query)
        rows = await self.db.fetch(SQL["list_documents"], {"entity_id": entity_id, "status": q.status,
                                                          "after": q.after, "limit": q.limit})
        return {"documents": [_json_ready(r) for r in rows],
                "next_after": rows[-1]["document_id"] if len(rows) == q.limit else None}

    async def delete_document(self, entity_id: str, document_id: str) -> dict:
        """Objects first (a retried delete can still find the row), then rows with cache invalidation, then
        objects again: an upload that stored its bytes in between (and confirmed them before the rows
        went) left them for this sweep; one that confirms after finds no row and removes its own."""
        db, bucket = self.db, self.bucket
        where = {"entity_id": entity_id, "document_id": document_id}
        row = await db.fetchone(SQL["pending_upload"], where)
        if row is None:
            raise NotFound(f"no document {document_id!r} in entity {entity_id!r}", field="document_id")
        if row["upload_id"]:
            try:
                await bucket.abort_multipart(row["object_key"], row["upload_id"])
            except ObjectStoreError:
                log.info("multipart upload %s was already gone", row["upload_id"])
        objects = [o.key for prefix in (keys.document_objects_prefix(entity_id, document_id),
                                        keys.artifacts_prefix(entity_id, document_id))
                   for o in await bucket.list(prefix)]
        if objects:
            await bucket.delete(*objects)

        await holds.point(db, "delete:rows", entity_id, document_id)
        async with Invalidation(self.kv) as invalidation:
            async with self.db.transaction() as conn:
                # Lock the row first so an ingest commit cannot add chunks we would not invalidate.
                locked = await (await conn.execute(SQL["lock_document"], where)).fetchone()
                if locked is None:
                    raise NotFound(f"no document {document_id!r} in entity {entity_id!r}", field="document_id")
                chunk_ids = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], where)).fetchall()]
                await invalidation.begin([entity_id], chunk_ids)
                gone = await (await conn.execute(SQL["delete_document"], where)).fetchone()
                await conn.execute(SQL["delete_runs"], {"prefix": keys.run_prefix(entity_id, document_id)})
        invalidated = invalidation.dropped
        objects += await self._sweep(entity_id, document_id, str(gone["generation"]), gone["upload_id"],
                                     gone["object_key"], already=set(objects))
        return {"deleted": True, "document_id": document_id, "entity_id": entity_id, "chunks_deleted": len(chunk_ids),
                "objects_deleted": len(objects), "cache_entries_invalidated": invalidated}

    async def _sweep(self, entity_id: str, document_id: str, generation: str, upload_id: str | None,
                     object_key: str, *, already: set[str]) -> list[str]:
        """After the rows are gone: what concurrent writers of the deleted life stored meanwhile (best
        effort; logged). Only that life's keys: the id may already have been uploaded anew."""
        try:
            if upload_id:
                try:
                    await self.bucket.abort_multipart(object_key, upload_id)
                except ObjectStoreError:
                    pass  # aborted above, or completed
            late = [o.key for prefix in (keys.document_objects_prefix(entity_id, document_id),
                                         keys.artifacts_prefix(entity_id, document_id))
                    for o in await self.bucket.list(prefix)
                    if o.key not in already and keys.of_generation(o.key, generation)]
            if late:
                await self.bucket.delete(*late)
            return late
        except (BindingError, ObjectStoreError):
            log.warning("objects of deleted document %s/%s not swept", entity_id, document_id, exc_info=True)
            return []
