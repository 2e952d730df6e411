"""The bulk route's new versions, written together: a few statements per request, one PUT per document.

A direct upload costs each document its own transactions (the live-version check, the version
row, its object key), a PUT, a confirmation and a read of the row it answers with. For a bulk
request of small documents that is most of the upload worker's and Postgres's work per
document. Here the lines that certainly need a new version (``bulk.py`` read their live rows
once) go through the same states in a few statements for the whole request:

1. one transaction: every line's ``create_or_bump`` (the direct upload's own statement, pipelined),
   then every object key set in one statement (rows locked in document-id order, like the ingest
   worker's grouped upserts, so two overlapping requests wait rather than deadlock);
2. one PUT per document (its bytes' CRC32 checked by the store: no HEAD after it);
3. one statement confirms every stored version and returns its status (no read of the row after).

Each line is still its own document and version with its own result: a PUT the store refuses
fails that version alone (``mark_upload_failed``), and a version a DELETE or a newer upload
overtook between 1 and 3 is refused alone, its bytes removed (``UploadService._refuse_stored``).
If the grouped transaction fails (a constraint one line breaks, a deadlock), nothing of it was
written and every line goes the direct upload's way, one at a time, so a bad line fails alone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import psycopg

from .. import holds, sqlfiles
from .. import object_keys as keys
from ..errors import EdgeIndexError, NotFound, ValidationError
from .models import DirectUploadQuery
from .service import version_row

log = logging.getLogger(__name__)
SQL = sqlfiles.load("bulk.sql")
DOCUMENTS_SQL = sqlfiles.load("documents.sql")
PUT_CONCURRENCY = 16  # PUTs in flight per request: boto3 threads, no pooled connection held


@dataclass
class NewVersion:
    """One line that gets a new version: what the direct upload would have stored."""

    document_id: str
    data: bytes
    media_type: str
    fields: DirectUploadQuery
    version: int = 0
    generation: str = ""
    key: str = ""


async def _create_versions(uploads, entity_id: str, lines: list[NewVersion]) -> None:
    """Every line's version row and object key, in one transaction (step 1 of the module doc)."""
    ordered = sorted(lines, key=lambda line: line.document_id)
    params = [version_row(entity_id, line.document_id, line.fields, media_type=line.media_type,
                          size_bytes=len(line.data), metadata=None) for line in ordered]
    async with uploads.db.transaction() as conn:
        cur = conn.cursor()
        await cur.executemany(DOCUMENTS_SQL["create_or_bump"], params, returning=True)
        for line, p in zip(ordered, params):
            row = await cur.fetchone()
            line.version, line.generation = row["version"], str(row["generation"])
            line.key = keys.object_key(entity_id, line.document_id, line.version, p["filename"], line.generation)
            cur.nextset()
        await conn.execute(SQL["set_objects"], {
            "entity_id": entity_id, "document_ids": [line.document_id for line in ordered],
            "versions": [line.version for line in ordered], "object_keys": [line.key for line in ordered]})


async def store_new_versions(uploads, entity_id: str, lines: list[NewVersion]) -> list[dict | EdgeIndexError]:
    """For each line, in order: ``{"version", "status"}`` of its stored version, or the error it failed with."""
    if not lines:
        return []
    try:
        await _create_versions(uploads, entity_id, lines)
    except psycopg.errors.ForeignKeyViolation:
        error = NotFound(f"unknown entity {entity_id!r}", field="entity_id")
        return [error] * len(lines)
    except psycopg.Error:
        log.info("bulk upload to %s: the grouped write failed; %d lines go one at a time", entity_id, len(lines),
                 exc_info=True)
        return await asyncio.gather(*(_one_by_one(uploads, entity_id, line) for line in lines))

    outcome: list[dict | EdgeIndexError | None] = [None] * len(lines)
    limit = asyncio.Semaphore(PUT_CONCURRENCY)

    async def put(i: int, line: NewVersion) -> None:
        where = {"entity_id": entity_id, "document_id": line.document_id, "version": line.version}
        async with limit:
            try:
                await holds.point(uploads.db, "upload:stored-version", entity_id, line.document_id)
                await uploads.put_version(where, line.key, line.data, line.media_type)
                await holds.point(uploads.db, "upload:confirm", entity_id, line.document_id)
            except EdgeIndexError as exc:
                outcome[i] = exc

    await asyncio.gather(*(put(i, line) for i, line in enumerate(lines)))
    stored = [i for i, o in enumerate(outcome) if o is None]
    if stored:
        confirmed = {r["document_id"]: r for r in await uploads.db.fetch(SQL["confirm_uploads"], {
            "entity_id": entity_id, "document_ids": [lines[i].document_id for i in stored],
            "versions": [lines[i].version for i in stored], "generations": [lines[i].generation for i in stored]})}

        async def settle(i: int) -> None:
            line = lines[i]
            if (row := confirmed.get(line.document_id)) is not None:
                outcome[i] = {"version": row["version"], "status": row["status"]}
                return
            try:  # overtaken by a DELETE or a newer upload: its bytes go, and the line says why
                await uploads._refuse_stored(entity_id, line.document_id, line.version, line.generation, line.key)
            except EdgeIndexError as exc:
                outcome[i] = exc

        await asyncio.gather(*(settle(i) for i in stored))
    return outcome


async def _one_by_one(uploads, entity_id: str, line: NewVersion) -> dict | EdgeIndexError:
    """The direct upload's own path for one line (after a grouped write failed)."""
    try:
        version, key, _, generation = await uploads._create_version(
            entity_id, line.document_id, line.fields, media_type=line.media_type, size_bytes=len(line.data),
            metadata=None)
        await uploads._store(entity_id, line.document_id, version, generation, key, line.data, line.media_type)
        document = await uploads.get_document(entity_id, line.document_id)
    except EdgeIndexError as exc:
        return exc
    except psycopg.Error as exc:  # the line's own write broke a constraint: it fails, the others go on
        return ValidationError(f"document {line.document_id!r} could not be stored: {exc.diag.message_primary or exc}",
                               field="document_id")
    return {"version": document["version"], "status": document["status"]}


__all__ = ["NewVersion", "store_new_versions"]
