"""``HistoryService``: a document's versions, the changes between two of them, an entity's retention.

A version is named by its number or by a time (the version live then). A version retention has
dropped is gone (410); a time before the document's first version stands for the empty
document, so ``changes?since=`` a time an agent last read answers everything added since.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import Gone, NotFound, ValidationError
from ..validation import parse
from .changes import VersionChunk, compare
from .retention import Retention, RetentionRequest

SQL = sqlfiles.load("history.sql")
Mark = Annotated[str, Field(min_length=1, max_length=64)]


class ChangesQuery(BaseModel):
    """``GET .../changes``: ``since`` and ``until`` are version numbers or ISO 8601 times."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    since: Mark
    until: Mark | None = None


def _mark(raw: str, field: str) -> int | datetime:
    text = raw.strip()
    if text.isdigit():
        return int(text)
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"{field} must be a version number or an ISO 8601 time, not {raw!r}",
                              field=field) from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


class HistoryService:
    def __init__(self, *, db: Database, retention: Retention) -> None:
        self.db = db
        self.retention = retention   # the deployment's (HISTORY_VERSIONS, HISTORY_DAYS)

    async def _document(self, where: dict) -> dict:
        row = await self.db.fetchone(SQL["document"], where)
        if row is None:
            raise NotFound(f"no document {where['document_id']!r} in entity {where['entity_id']!r}",
                           field="document_id")
        return row

    async def versions(self, entity_id: str, document_id: str) -> dict:
        where = {"entity_id": entity_id, "document_id": document_id}
        document = await self._document(where)
        rows = await self.db.fetch(SQL["versions"], where)
        return {"entity_id": entity_id, "document_id": document_id, "live_version": document["ready_version"],
                "pruned_to": document["history_pruned_to"],
                "versions": [{"version": r["version"], "live_from": r["live_from"], "live_to": r["live_to"],
                              "chunk_count": r["chunk_count"]} for r in rows],
                "retention": await self.retention_of(entity_id)}

    async def _resolve(self, where: dict, document: dict, mark: int | datetime, field: str) -> int | None:
        """The retained version ``mark`` names, or None for before the document's first version
        (version 0, or a time before any version was live)."""
        pruned = document["history_pruned_to"]
        if isinstance(mark, int):
            if mark == 0:
                return None
            if pruned is not None and mark <= pruned:
                raise Gone(f"{field}: version {mark} is past this entity's history retention "
                           f"(versions up to {pruned} were dropped)", field=field)
            kept = {r["version"] for r in await self.db.fetch(SQL["versions"], where)}
            if mark not in kept:
                raise NotFound(f"{field}: version {mark} of this document was never live "
                               f"(live versions kept: {sorted(kept)})", field=field)
            return mark
        row = await self.db.fetchone(SQL["version_at"], {**where, "at": mark})
        if row is not None:
            return row["version"]
        first = await self.db.fetchone(SQL["first_version"], where)
        # before the oldest version kept: the empty document if the document did not exist yet, gone if
        # it did and retention dropped the version live then
        if first is not None and pruned is not None and document["created_at"] <= mark < first["live_from"]:
            raise Gone(f"{field}: {mark.isoformat()} is before the oldest version this entity's history "
                       f"retention keeps (version {first['version']}, live from {first['live_from'].isoformat()})",
                       field=field)
        return None

    async def _chunks(self, where: dict, version: int | None) -> list[VersionChunk]:
        if version is None:
            return []
        rows = await self.db.fetch(SQL["version_chunks"], {**where, "version": version})
        return [VersionChunk(r["position"], r["chunk_id"], r["content"], r["content_hash"]) for r in rows]

    async def changes(self, entity_id: str, document_id: str, query: dict[str, Any]) -> dict:
        asked = parse(ChangesQuery, query)
        marks = _mark(asked.since, "since"), None if asked.until is None else _mark(asked.until, "until")
        where = {"entity_id": entity_id, "document_id": document_id}
        document = await self._document(where)
        since = await self._resolve(where, document, marks[0], "since")
        until = (document["ready_version"] if marks[1] is None
                 else await self._resolve(where, document, marks[1], "until"))
        if since is not None and until is not None and since > until:
            raise ValidationError(f"since (version {since}) is later than until (version {until})", field="since")
        found = compare(await self._chunks(where, since), await self._chunks(where, until))
        return {"entity_id": entity_id, "document_id": document_id, "since_version": since,
                "until_version": until, **found}

    async def retention_of(self, entity_id: str) -> dict:
        row = await self.db.fetchone(SQL["retention"], {"entity_id": entity_id})
        if row is None:
            raise NotFound(f"no entity {entity_id!r}", field="entity_id")
        own = {"versions": row["history_versions"], "days": row["history_days"]}
        return {"versions": own["versions"] if own["versions"] is not None else self.retention.versions,
                "days": own["days"] if own["days"] is not None else self.retention.days, "own": own}

    async def set_retention(self, entity_id: str, body: dict) -> dict:
        """An entity's own bounds (null: the deployment's), applied to what it keeps at once."""
        asked = parse(RetentionRequest, body)
        if await self.db.fetchone(SQL["set_retention"], {"entity_id": entity_id, "versions": asked.versions,
                                                          "days": asked.days}) is None:
            raise NotFound(f"no entity {entity_id!r}", field="entity_id")
        await self.prune(entity_id)
        return {"entity_id": entity_id, **await self.retention_of(entity_id)}

    async def prune(self, entity_id: str | None = None) -> None:
        """Apply retention to one entity's documents, or (None) every entity with history (the age
        bound moves with time: the upload worker's sweep)."""
        entities = [entity_id] if entity_id else [r["entity_id"] for r in await self.db.fetch(
            SQL["entities_with_history"], {})]
        for entity in entities:
            where = {"entity_id": entity, "document_id": None}
            async with self.db.transaction() as conn:
                await conn.execute(SQL["prune_versions"], {**where, **self.retention.params()})
                await conn.execute(SQL["prune_archive"], where)
