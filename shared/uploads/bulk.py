"""Bulk upload: many small documents in one request (NDJSON), each its own document and version.

Agents and folder syncs push many small files; one HTTP request per file spends more on the
round trip than on the file. ``POST /entities/{entity_id}/documents`` takes one JSON object
per line (``BulkDocument``) and stores every line as a direct upload would
(``UploadService.direct_upload``'s checks and states): its own row, its own object, its own
bucket event and so its own durable ingestion run. The new versions of one request are written
together (``bulk_versions``: a few statements per request, one PUT per document). A bad line never sinks the others: the answer holds one result
per line, in order, each ``accepted``, ``unchanged`` or ``failed`` with the error (code,
message, field) a single upload would have answered.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from typing import Annotated, Any

from pydantic import StringConstraints

from .. import sqlfiles
from ..errors import EdgeIndexError, UnsupportedMediaType, ValidationError
from ..json_codec import MAX_JSON_DEPTH
from ..validation import DocumentId, content_hash, parse
from .bulk_versions import NewVersion, store_new_versions
from .models import DocumentFields

SQL = sqlfiles.load("bulk.sql")
MAX_BULK_DOCUMENTS = 1000
MAX_BULK_BYTES = 32 * 1024 * 1024  # each line is also held to MAX_UPLOAD_BYTES
MEDIA_TYPES = ("application/x-ndjson", "application/ndjson", "application/jsonl")
BULK_CONCURRENCY = 8  # lines stored at once: each holds a pooled connection at a time, the pool is shared


class BulkDocument(DocumentFields):
    """One NDJSON line: a document id and its content (``text``, or ``content_base64`` for binary types)."""

    document_id: DocumentId
    content_type: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "text/plain"
    text: str | None = None
    content_base64: str | None = None
    skip_unchanged: bool = True  # the same bytes as the live version: no new version (as a direct upload)


# What a direct upload calls a field, as a bulk line calls it.
_LINE_FIELDS = {"Content-Type": "content_type", "body": "text"}


def _payload(doc: BulkDocument) -> bytes:
    if doc.text is not None:
        return doc.text.encode("utf-8")
    try:
        return base64.b64decode(doc.content_base64 or "", validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError("content_base64 is not valid base64", field="content_base64") from None


def _query(doc: BulkDocument) -> dict[str, str]:
    """The direct upload's query for this line (the same validation runs on it)."""
    query = {"skip_unchanged": "true" if doc.skip_unchanged else "false"}
    for name in ("title", "source", "filename", "collection"):
        if (value := getattr(doc, name)) is not None:
            query[name] = value
    if doc.tags is not None:
        query["tags"] = ",".join(doc.tags)
    return query


def _unchanged(row: dict | None, doc: BulkDocument, data: bytes) -> bool:
    if row is None or row["status"] != "ready" or row["ready_version"] != row["version"]:
        return False
    if doc.collection is not None:  # a line naming its collection goes the direct upload's way, which files it
        return False
    media = doc.content_type.partition(";")[0].strip().lower()
    if (row["content_hash"], row["content_type"]) != (content_hash(data), media):
        return False
    return all(getattr(doc, name) is None or getattr(doc, name) == row[name] for name in ("title", "source", "tags"))


def parse_lines(body: bytes, check_json=None) -> list[tuple[int, dict[str, Any] | EdgeIndexError]]:
    """(line number, JSON object or the error for that line) for every non-blank line.

    Everything that can be wrong with one line (not UTF-8, not JSON, nested too deep, a NUL or a
    lone surrogate anywhere in it, as ``check_json`` finds) is that line's error: nothing of a bad
    line reaches the database, and the other lines go on."""
    # NDJSON lines end at "\n" only: str.splitlines() also breaks at U+0085, U+2028 and other separators
    # that JSON encoders leave raw inside strings (an MS MARCO passage holds U+0085), splitting a document in two.
    lines = [(n, line.removesuffix(b"\r")) for n, line in enumerate(body.split(b"\n"), start=1) if line.strip()]
    if not lines:
        raise ValidationError("body is empty: send one JSON object per line", field="body")
    if len(lines) > MAX_BULK_DOCUMENTS:
        raise ValidationError(f"body: {len(lines)} documents is more than the {MAX_BULK_DOCUMENTS} "
                              "one request takes", field="body")
    out: list[tuple[int, dict[str, Any] | EdgeIndexError]] = []
    for n, raw in lines:
        try:
            out.append((n, _line(n, raw, check_json)))
        except EdgeIndexError as exc:
            out.append((n, exc))
    return out


def _line(n: int, raw: bytes, check_json) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValidationError(f"line {n} is not UTF-8", field="body") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"line {n} is not valid JSON: {exc.msg}", field="body") from None
    except RecursionError:
        raise ValidationError(f"line {n}: nested more than {MAX_JSON_DEPTH} levels deep", field="body") from None
    if not isinstance(value, dict):
        raise ValidationError(f"line {n} must be a JSON object", field="body")
    if check_json is not None:
        check_json(value)
    return value


async def bulk_upload(uploads, entity_id: str, body: bytes, *, check_json=None) -> dict:
    """Store every line as a direct upload would; one result per line, in order (see the module doc).

    Lines whose live version may already hold their bytes go the direct upload's way, one each (it
    checks under a row lock and updates changed fields in place); every other good line needs a new
    version, and those are written together (``bulk_versions``: a few statements per request)."""
    parsed = parse_lines(body, check_json)
    ids = [line.get("document_id") for _, line in parsed if isinstance(line, dict)]
    seen: set = set()
    repeated = {i for i in ids if isinstance(i, str) and (i in seen or seen.add(i))}
    limit = asyncio.Semaphore(BULK_CONCURRENCY)
    named = [i for i in ids if isinstance(i, str)]
    live = {r["document_id"]: r for r in await uploads.db.fetch(SQL["live_versions"], {
        "entity_id": entity_id, "document_ids": named})} if named else {}
    results: list[dict] = []
    direct: list[tuple[int, BulkDocument, bytes]] = []  # (index in results, line, bytes)
    grouped: list[tuple[int, NewVersion]] = []

    def failed(result: dict, line, exc: EdgeIndexError) -> dict:
        error = exc.to_dict()
        if isinstance(line, dict) and error.get("field") in _LINE_FIELDS:
            field = _LINE_FIELDS[error["field"]]
            error["field"] = "content_base64" if field == "text" and "content_base64" in line else field
        return {**result, "outcome": "failed", "status": exc.status, "error": error}

    for n, line in parsed:
        document_id = line.get("document_id") if isinstance(line, dict) else None
        result: dict[str, Any] = {"line": n, "document_id": document_id if isinstance(document_id, str) else None}
        results.append(result)
        try:
            if isinstance(line, EdgeIndexError):
                raise line
            doc = parse(BulkDocument, line)
            if (doc.text is None) == (doc.content_base64 is None):
                raise ValidationError("give exactly one of text and content_base64", field="text")
            if doc.document_id in repeated:
                # Two versions of one document in one request: which one wins would be a race.
                raise ValidationError(f"document_id {doc.document_id!r} appears more than once in this request",
                                      field="document_id")
            data = _payload(doc)
            row = live.get(doc.document_id)
            if doc.skip_unchanged and _unchanged(row, doc, data):
                # The ready version has these bytes and these fields: nothing to write at all.
                results[-1] = {**result, "outcome": "unchanged", "status": 200, "version": row["version"],
                               "document_status": "ready"}
                continue
            media_type, fields = uploads.check_direct(data, raw_content_type=doc.content_type, query=_query(doc))
            if doc.skip_unchanged and _same_bytes(row, data, media_type):
                direct.append((len(results) - 1, doc, data))  # maybe only fields change: the direct way
            else:
                grouped.append((len(results) - 1, NewVersion(doc.document_id, data, media_type, fields)))
        except EdgeIndexError as exc:
            results[-1] = failed(result, line, exc)

    async def one(i: int, doc: BulkDocument, data: bytes) -> None:
        try:
            async with limit:
                document, created = await uploads.direct_upload(entity_id, doc.document_id, data,
                                                                raw_content_type=doc.content_type,
                                                                query=_query(doc))
        except EdgeIndexError as exc:
            results[i] = failed(results[i], parsed[i][1], exc)
            return
        results[i] = {**results[i], "outcome": "accepted" if created else "unchanged",
                      "status": 202 if created else 200, "version": document["version"],
                      "document_status": document["status"]}

    async def new_versions() -> None:
        stored = await store_new_versions(uploads, entity_id, [version for _, version in grouped])
        for (i, _), out in zip(grouped, stored):
            if isinstance(out, EdgeIndexError):
                results[i] = failed(results[i], parsed[i][1], out)
            else:
                results[i] = {**results[i], "outcome": "accepted", "status": 202, "version": out["version"],
                              "document_status": out["status"]}

    await asyncio.gather(new_versions(), *(one(i, doc, data) for i, doc, data in direct))
    counts = {name: sum(r["outcome"] == name for r in results) for name in ("accepted", "unchanged", "failed")}
    return {"entity_id": entity_id, **counts, "results": results}


def _same_bytes(row: dict | None, data: bytes, media_type: str) -> bool:
    """Whether the live version (as read at the request's start) may already hold these bytes."""
    return (row is not None and row["status"] == "ready" and row["ready_version"] == row["version"]
            and (row["content_hash"], row["content_type"]) == (content_hash(data), media_type))


def check_media_type(raw: str | None) -> None:
    media = (raw or "").partition(";")[0].strip().lower()
    if media not in MEDIA_TYPES:
        raise UnsupportedMediaType(f"Content-Type {media or 'missing'!r}: this route takes NDJSON "
                                   f"({', '.join(MEDIA_TYPES)}), one document per line", field="Content-Type")


__all__ = ["BulkDocument", "bulk_upload", "check_media_type", "MAX_BULK_BYTES", "MAX_BULK_DOCUMENTS"]
