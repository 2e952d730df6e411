"""What each client method does, written once for both clients.

An operation is a generator that yields what it needs done — a ``Call`` (one HTTP
request), ``Parallel`` calls, or a ``Sleep`` — and gets the answers back; the sync
client runs it with blocking I/O and the async client with ``await``. So ``Client``
and ``AsyncClient`` cannot drift apart: they share every step, not just the names.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from . import models as m
from .errors import DocumentFailedError, NotFoundError, WaitTimeoutError

Service = Literal["upload", "search"]
UploadMode = Literal["auto", "direct", "presigned", "multipart"]
DIRECT_MAX_BYTES = 4 * 1024 * 1024  # larger bodies go through a presigned URL, straight to object storage


@dataclass
class Call:
    method: str
    path: str  # relative to the service's URL, or an absolute (presigned) URL when service is None
    service: Service | None = "upload"
    json: Any = None
    content: bytes | None = None
    params: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any  # parsed JSON, or None


@dataclass
class RawResponse:
    """A reply as the server sent it (``Client.request``): nothing raised, nothing retried."""

    status: int
    headers: dict[str, str]  # names in lower case
    body: Any  # parsed JSON when the reply is JSON, else the raw bytes (None when empty)


@dataclass
class Parallel:
    calls: list[Call]


@dataclass
class Sleep:
    seconds: float


Op = Generator[Call | Parallel | Sleep, Any, Any]


def path_segment(value: str) -> str:
    """One id as one URL path segment: everything but unreserved characters percent-encoded, and ids
    made of dots only ("." or "..", valid document ids) as %2E, which HTTP clients would otherwise
    resolve as relative path steps (RFC 3986, section 5.2.4) and send to another route."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded.strip(".") == "" else encoded


_seg = path_segment


def _doc_path(entity_id: str, document_id: str) -> str:
    return f"/entities/{_seg(entity_id)}/documents/{_seg(document_id)}"


# --- tenancy (admin key) -------------------------------------------------------------------------

def create_entity(id: str, kind: m.EntityKind = "user", name: str | None = None) -> Op:
    reply = yield Call("POST", "/admin/entities", json=m.EntityCreate(id=id, kind=kind, name=name).to_json())
    return m.Entity.model_validate(reply.body)


def list_entities() -> Op:
    reply = yield Call("GET", "/admin/entities")
    return [m.Entity.model_validate(e) for e in reply.body["entities"]]


def create_key(name: str, entity_ids: list[str] | None = None, admin: bool = False) -> Op:
    body = m.KeyCreate(name=name, entity_ids=entity_ids, admin=admin or None).to_json()
    reply = yield Call("POST", "/admin/keys", json=body)
    return m.CreatedKey.model_validate(reply.body)


def list_keys() -> Op:
    reply = yield Call("GET", "/admin/keys")
    return [m.APIKey.model_validate(k) for k in reply.body["keys"]]


def revoke_key(key_id: str) -> Op:
    reply = yield Call("DELETE", f"/admin/keys/{_seg(key_id)}")
    return m.RevokedKey.model_validate(reply.body)


# --- documents ---------------------------------------------------------------------------------------

def get_document(entity_id: str, document_id: str) -> Op:
    reply = yield Call("GET", _doc_path(entity_id, document_id))
    return m.Document.model_validate(reply.body)


def list_documents(entity_id: str, *, status: str | None = None, after: str | None = None,
                   limit: int | None = None) -> Op:
    params = {k: str(v) for k, v in {"status": status, "after": after, "limit": limit}.items() if v is not None}
    reply = yield Call("GET", f"/entities/{_seg(entity_id)}/documents", params=params)
    return m.DocumentPage.model_validate(reply.body)


def delete_document(entity_id: str, document_id: str) -> Op:
    reply = yield Call("DELETE", _doc_path(entity_id, document_id))
    return m.DeletedDocument.model_validate(reply.body)


def document_versions(entity_id: str, document_id: str) -> Op:
    reply = yield Call("GET", f"{_doc_path(entity_id, document_id)}/versions")
    return m.DocumentVersions.model_validate(reply.body)


def _mark(value: int | str | datetime) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def document_changes(entity_id: str, document_id: str, since: int | str | datetime,
                     until: int | str | datetime | None = None) -> Op:
    params = {"since": _mark(since), **({"until": _mark(until)} if until is not None else {})}
    reply = yield Call("GET", f"{_doc_path(entity_id, document_id)}/changes", params=params)
    return m.DocumentChanges.model_validate(reply.body)


def history_retention(entity_id: str) -> Op:
    reply = yield Call("GET", f"/entities/{_seg(entity_id)}/history")
    return m.Retention.model_validate(reply.body)


def set_history_retention(entity_id: str, *, versions: int | None, days: int | None) -> Op:
    reply = yield Call("PUT", f"/entities/{_seg(entity_id)}/history", json={"versions": versions, "days": days})
    return m.Retention.model_validate(reply.body)


def wait_ready(entity_id: str, document_id: str, *, version: int | None = None, timeout: float = 120.0,
               interval: float = 0.25, max_interval: float = 2.0) -> Op:
    """Poll until the document (at ``version`` or later, if given) is ready; raise if it failed or time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        doc = yield from get_document(entity_id, document_id)
        current = version is None or doc.version >= version
        if current and doc.status == "ready":
            return doc
        if current and doc.status == "failed":
            raise DocumentFailedError(doc)
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(doc, timeout)
        yield Sleep(min(interval, max(0.0, deadline - time.monotonic())))
        interval = min(interval * 1.5, max_interval)


# --- uploads -------------------------------------------------------------------------------------------

def _doc_fields(title, source, tags, filename, collection=None) -> dict[str, str]:
    fields = {"title": title, "source": source, "filename": filename, "collection": collection,
              "tags": ",".join(tags) if tags is not None else None}
    return {k: v for k, v in fields.items() if v is not None}


def upload_bytes(entity_id: str, document_id: str | None, data: bytes, *, content_type: str,
                 title: str | None = None, source: str | None = None, tags: list[str] | None = None,
                 filename: str | None = None, metadata: dict[str, Any] | None = None,
                 skip_unchanged: bool = True, mode: UploadMode = "auto",
                 direct_max_bytes: int = DIRECT_MAX_BYTES, collection: str | None = None) -> Op:
    """Upload one document version, by the cheapest path that fits.

    ``direct``: one PUT to the upload worker (small bodies). ``presigned``: ask for a
    presigned URL and PUT the bytes to object storage; the server answers with a
    multipart upload instead when the body is above its threshold (``multipart``
    asks for one anyway), whose parts are PUT in parallel and then completed.
    ``skip_unchanged``: bytes identical to the ready version create no new version
    (the returned document has ``unchanged=True``)."""
    if mode == "auto":
        mode = "direct" if len(data) <= direct_max_bytes and metadata is None and document_id else "presigned"
    if mode == "direct":
        if not document_id:
            raise ValueError("a direct upload needs a document_id")
        params = _doc_fields(title, source, tags, filename, collection)
        params["skip_unchanged"] = "true" if skip_unchanged else "false"  # said either way: never the server's guess
        reply = yield Call("PUT", _doc_path(entity_id, document_id), content=data, params=params,
                           headers={"Content-Type": content_type})
        return m.Document.model_validate(reply.body)

    digest = hashlib.sha256(data).hexdigest()
    if skip_unchanged and document_id:
        # Presigned uploads record the bytes' hash in the document's metadata; same hash, ready: nothing to send.
        try:
            live = yield from get_document(entity_id, document_id)
        except NotFoundError:
            live = None
        if (live is not None and live.status == "ready" and live.version == live.ready_version
                and (live.metadata or {}).get("sha256") == digest and live.content_type == content_type):
            return live.model_copy(update={"unchanged": True})
    request = m.UploadRequest(content_type=content_type, size_bytes=len(data), document_id=document_id, title=title,
                              source=source, tags=tags, filename=filename, collection=collection,
                              metadata={**(metadata or {}), "sha256": digest},
                              multipart=True if mode == "multipart" else None)
    reply = yield Call("POST", f"/entities/{_seg(entity_id)}/uploads", json=request.to_json())
    ticket = m.UploadTicket.model_validate(reply.body)
    if ticket.multipart is not None:
        mp = ticket.multipart
        parts = [Call("PUT", p.url, service=None,
                      content=data[(p.part_number - 1) * mp.part_size:p.part_number * mp.part_size])
                 for p in mp.parts]
        replies = yield Parallel(parts)
        etags = [{"part_number": p.part_number, "etag": r.headers.get("etag", "").strip()}
                 for p, r in zip(mp.parts, replies, strict=True)]
        yield Call("POST", f"/entities/{_seg(entity_id)}/uploads/{_seg(ticket.document_id)}/complete",
                   json={"upload_id": mp.upload_id, "parts": etags})
    elif ticket.upload is not None:
        yield Call(ticket.upload.method, ticket.upload.url, service=None, content=data,
                   headers=dict(ticket.upload.headers))
    else:  # pragma: no cover - a server answering neither is broken
        raise ValueError(f"upload answer has neither 'upload' nor 'multipart': {reply.body}")
    return (yield from get_document(entity_id, ticket.document_id))


# The server takes up to 1,000 documents (32 MiB) a request, but stores each line in turn: 100 a
# request answers within seconds even on a loaded machine, so a request timeout never reports as
# failed documents the server went on to accept.
BULK_MAX_DOCUMENTS = 100
BULK_MAX_BYTES = 4 * 1024 * 1024
BULK_FILE_MAX_BYTES = 256 * 1024         # files up to this size go in bulk requests


def upload_many(entity_id: str, documents: list[m.BulkDocument]) -> Op:
    """Many small documents in one request (NDJSON); one result per document, in order.

    Each is its own document version, ingested on its own; a bad one is reported in its
    result (``outcome == "failed"`` with the error) and does not stop the others."""
    import json

    body = "".join(json.dumps(d.to_json(), ensure_ascii=False) + "\n" for d in documents).encode()
    reply = yield Call("POST", f"/entities/{_seg(entity_id)}/documents", content=body,
                       headers={"Content-Type": "application/x-ndjson"})
    return m.BulkResult.model_validate(reply.body)


def bulk_batches(sizes: list[int], *, max_documents: int = BULK_MAX_DOCUMENTS,
                 max_bytes: int = BULK_MAX_BYTES) -> list[list[int]]:
    """Indexes of documents grouped into requests within both limits, in order."""
    batches: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, size in enumerate(sizes):
        if current and (len(current) >= max_documents or used + size > max_bytes):
            batches.append(current)
            current, used = [], 0
        current.append(i)
        used += size
    if current:
        batches.append(current)
    return batches


def bulk_document(document_id: str, data: bytes, *, content_type: str, filename: str | None = None,
                  source: str | None = None, tags: list[str] | None = None,
                  skip_unchanged: bool = True, collection: str | None = None) -> m.BulkDocument:
    """A file's bytes as a bulk line: text when it is UTF-8 text, else base64."""
    import base64

    text: str | None = None
    if content_type.startswith("text/") or content_type == "application/json":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return m.BulkDocument(document_id=document_id, text=text,
                          content_base64=None if text is not None else base64.b64encode(data).decode(),
                          content_type=content_type, filename=filename, source=source, tags=tags,
                          skip_unchanged=skip_unchanged, collection=collection)


def bulk_item_document(entity_id: str, item: m.BulkItem) -> m.Document:
    """What ``upload_files`` reports for a line stored by a bulk request (raises its error if it failed)."""
    from .errors import error_from_response

    if item.outcome == "failed" or item.error is not None:
        raise error_from_response(item.status, item.error.model_dump() if item.error else None)
    return m.Document(document_id=item.document_id or "", entity_id=entity_id, version=item.version or 0,
                      status=item.document_status or "pending", unchanged=item.outcome == "unchanged")


def upload_bulk_files(entity_id: str, files: list, datas: list[bytes], *, skip_unchanged: bool,
                      source: str | None, tags: list[str] | None, collection: str | None) -> Op:
    """Files already read (``files``: ``FileToUpload``, ``datas``: their bytes) in one bulk request;
    returns an ``UploadOutcome`` per file, in order. A line the server refused carries its error; a
    request that failed as a whole reports that error on every file of it."""
    from ._shared_api import UploadOutcome
    from .files import guess_content_type

    outcomes = [UploadOutcome(f.path, f.document_id) for f in files]
    try:
        docs = [bulk_document(f.document_id, data, content_type=guess_content_type(f.path), filename=f.path.name,
                              source=source, tags=tags, skip_unchanged=skip_unchanged, collection=collection)
                for f, data in zip(files, datas, strict=True)]
        result = yield from upload_many(entity_id, docs)
        for outcome, item in zip(outcomes, result.results, strict=True):
            try:
                outcome.document = bulk_item_document(entity_id, item)
            except Exception as exc:
                outcome.error = exc
    except Exception as exc:  # the whole request failed: every file of it reports why
        for outcome in outcomes:
            outcome.error = exc
    return outcomes


# --- search and selection -------------------------------------------------------------------------------

def search(request: m.SearchRequest) -> Op:
    reply = yield Call("POST", "/search", service="search", json=request.to_json())
    return m.SearchResponse.model_validate(reply.body)


def create_trajectory(trajectory_id: str | None) -> Op:
    reply = yield Call("POST", "/trajectories", service="search",
                       json={} if trajectory_id is None else {"id": trajectory_id})
    return m.TrajectoryInfo.model_validate(reply.body)


def expand(trajectory_id: str, request: m.ExpandRequest) -> Op:
    reply = yield Call("POST", f"/trajectories/{_seg(trajectory_id)}/expand", service="search", json=request.to_json())
    return m.TrajectoryExpansion.model_validate(reply.body)


def grounding(trajectory_id: str) -> Op:
    reply = yield Call("GET", f"/trajectories/{_seg(trajectory_id)}", service="search")
    return m.TrajectoryGrounding.model_validate(reply.body)


def delete_trajectory(trajectory_id: str) -> Op:
    reply = yield Call("DELETE", f"/trajectories/{_seg(trajectory_id)}", service="search")
    return bool(reply.body.get("deleted"))


def select(route: str, body: dict[str, Any], answer: type[m.Selection] = m.Selection) -> Op:
    """``POST /tools/select`` or ``/indices/select`` on the search worker (routes of the selection work)."""
    reply = yield Call("POST", route, service="search", json=body)
    return answer.model_validate(reply.body)


def register_indices(entity_id: str, indices: list[m.IndexDescriptor | dict[str, Any]]) -> Op:
    """``POST /entities/{entity}/indices``."""
    items = [m.IndexDescriptor.model_validate(d).model_dump(exclude_none=True) for d in indices]
    reply = yield Call("POST", f"/entities/{_seg(entity_id)}/indices", service="search", json={"indices": items})
    return m.IndexRegistration.model_validate(reply.body)


def register_tools(entity_id: str, tools: list[dict[str, Any]], *, batch: int = 1000) -> Op:
    """``POST /entities/{entity}/tools`` in batches the server accepts; one answer for all of them."""
    total: dict[str, Any] = {"entity_id": entity_id, "registered": 0, "embedded": 0, "updated_without_embedding": 0,
                             "unchanged": 0, "unresolved_requires": [], "tools": []}
    for start in range(0, len(tools), batch):
        reply = yield Call("POST", f"/entities/{_seg(entity_id)}/tools", service="search",
                           json={"tools": tools[start:start + batch]})
        for key in ("registered", "embedded", "updated_without_embedding", "unchanged"):
            total[key] += reply.body.get(key, 0)
        total["tools"] += reply.body.get("tools", [])
        total["model_id"] = reply.body.get("model_id")
        total["unresolved_requires"] = reply.body.get("unresolved_requires", [])   # the last batch knows them all
    return m.ToolRegistration.model_validate(total)


def list_collections(entity_id: str) -> Op:
    reply = yield Call("GET", f"/entities/{_seg(entity_id)}/collections", service="search")
    return m.CollectionList.model_validate(reply.body)


def describe_collection(entity_id: str, name: str, description: str) -> Op:
    reply = yield Call("PUT", f"/entities/{_seg(entity_id)}/collections/{_seg(name)}", service="search",
                       json={"description": description})
    return m.Collection.model_validate(reply.body)


def get_json(service: Service, path: str) -> Op:
    reply = yield Call("GET", path, service=service)
    return reply.body
