"""Collections: the indices made of a tenant's own documents.

A document names its collection at upload (``collection``); a collection has a name, an
optional description (``PUT /entities/{entity}/collections/{name}``) and a profile kept by
the ingest worker: the field names of its JSON documents, its tags and sources, its
distinctive terms (from the term statistics: frequent in its chunks, rare in the entity's),
and a summary of its documents' summaries (their most representative sentences, with the
extractive summarizer ingestion uses; no LLM).

The profile is the collection's descriptor for index selection: a row of
``index_descriptors`` with kind ``collection``, scored beside the external descriptors by
``POST /indices/select`` and used by ``POST /search`` with ``collections: "auto"``.

Incremental and cheap: a trigger on ``documents`` records which collections changed
(infra/migrations/0008_collections.sql), and :class:`CollectionRefresher` in the ingest worker
recomputes each one once its documents have stopped changing for a moment (debounced, with
a bound on the wait), from bounded samples, with one embedding.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from .. import sqlfiles, validation
from ..cache import Invalidation
from ..errors import Conflict, ModelSwitching, NotFound, ValidationError
from ..ingest.summary import extractive_summary
from . import field_vectors as fv
from .catalog_cache import bump, serving_guard
from .indices import KIND, MAX_PER_ENTITY, IndexDef, field_plan

log = logging.getLogger(__name__)
SQL = sqlfiles.load("collections.sql")
TOOLS_SQL = sqlfiles.load("tools.sql")   # the registry lock and count shared with indices

DEBOUNCE_SECONDS = 0.5     # quiet time after a collection's last change before it is recomputed
MAX_WAIT_SECONDS = 5.0     # ... but never longer than this after its first unprocessed change
POLL_SECONDS = 0.25
BATCH = 20                 # collections recomputed per poll
MAX_DOCUMENTS = 500        # documents whose tags, sources and summaries make a profile
MAX_CHUNKS = 2000          # chunks sampled for distinctive terms and JSON fields
MAX_TERMS = 40
MAX_FIELDS = 200
MAX_LABELS = 30            # tags, sources
SUMMARY_SENTENCES = 3


@dataclass(frozen=True)
class Profile:
    description: str
    fields: list[str]
    profile: dict[str, Any]


def build_profile(description: str, documents: list[dict], terms: list[dict], fields: list[dict],
                  counts: dict) -> Profile:
    """The profile of a collection from what the database returned (pure: unit-tested alone)."""
    tags = Counter(t for d in documents for t in (d["tags"] or []))
    sources = Counter(d["source"] for d in documents if d["source"])
    summaries = [d["summary"].strip() for d in documents if (d["summary"] or "").strip()]
    summary = extractive_summary("\n".join(summaries), SUMMARY_SENTENCES) if summaries else ""
    words = list(dict.fromkeys(t["word"] for t in terms))
    return Profile(description, [f["path"] for f in fields], {
        "documents": int(counts["ready"]),
        "tags": [t for t, _ in tags.most_common(MAX_LABELS)],
        "sources": [s for s, _ in sources.most_common(MAX_LABELS)],
        "terms": words,
        "summary": summary,
        "titles": [d["title"] for d in documents if d["title"]][:10],
    })


async def _compute(conn, entity_id: str, name: str) -> tuple[dict | None, Profile | None]:
    where = {"entity_id": entity_id, "name": name, "collection": name}
    row = await (await conn.execute(SQL["get"], where)).fetchone()
    counts = await (await conn.execute(SQL["counts"], where)).fetchone()
    if counts["ready"] == 0:
        return row, None
    documents = await (await conn.execute(SQL["documents"], {**where, "max_documents": MAX_DOCUMENTS})).fetchall()
    terms = await (await conn.execute(SQL["distinctive_terms"], {**where, "max_chunks": MAX_CHUNKS,
                                                                 "max_terms": MAX_TERMS})).fetchall()
    fields = await (await conn.execute(SQL["json_fields"], {**where, "max_chunks": MAX_CHUNKS,
                                                            "max_fields": MAX_FIELDS})).fetchall()
    return row, build_profile(row["description"] if row else "", documents, terms, fields, counts)


async def refresh(db, embedder, kv, entity_id: str, name: str) -> str:
    """Recompute one collection's descriptor now: ``updated``, ``unchanged``, ``removed`` or ``none``.

    Under the collection's advisory lock, so a description set meanwhile is never overwritten
    by an older read. A changed descriptor retires the entity's cached searches (bracketing the
    commit like ingestion does): ``collections: "auto"`` may now choose differently.
    """
    async with Invalidation(kv) as invalidation:
        async with db.transaction() as conn:
            await serving_guard(conn, embedder.model_id, "collection profiles")
            where = {"entity_id": entity_id, "name": name}
            await conn.execute(SQL["lock"], where)
            row, profile = await _compute(conn, entity_id, name)
            existing = await (await conn.execute(SQL["descriptor"], where)).fetchone()
            if existing is not None and existing["kind"] != "collection":
                log.warning("collection %s/%s is not selectable: an external index has that name", entity_id, name)
                return "none"
            description = row["description"] if row else ""
            if profile is None and not description:
                await conn.execute(SQL["drop"], where)
                if existing is None:
                    return "none"
                await invalidation.begin([entity_id], [])
                await conn.execute(SQL["delete_descriptor"], where)
                await bump(conn, entity_id, KIND)
                return "removed"
            profile = profile or Profile(description, [], {"documents": 0, "tags": [], "sources": [], "terms": [],
                                                           "summary": "", "titles": []})
            index = IndexDef(name, description, tuple(profile.fields), kind="collection", profile=profile.profile)
            digest = descriptor_hash(embedder.model_id, description, profile.fields, profile.profile)
            if existing is not None and existing["content_hash"] == digest:
                return "unchanged"
            vector = (await embedder.embed([index.embedded_text()]))[0]
            matrix, field_hash, embedded = await _field_vectors(embedder, index, existing, len(vector))
            await invalidation.begin([entity_id], [])
            await conn.execute(SQL["upsert_descriptor"], {
                **where, "description": description, "fields": profile.fields, "profile": Jsonb(profile.profile),
                "content_hash": digest, "model_id": embedder.model_id, "embedding": vector,
                "field_vectors": fv.pack(matrix) if matrix is not None else None, "field_hash": field_hash,
                "fields_embedded": embedded > 0})
            await bump(conn, entity_id, KIND)
            return f"updated, {embedded} field(s) embedded" if embedded else "updated"


def descriptor_hash(model_id: str, description: str, fields: list[str], profile: dict) -> str:
    """What a collection's descriptor vectors are made of, and by which model: unchanged, not re-embedded."""
    return validation.content_hash(json.dumps({"model": model_id, "description": description, "fields": fields,
                                               "profile": profile, "field_text": fv.FIELD_TEXT_VERSION},
                                              sort_keys=True))


async def _field_vectors(embedder, index: IndexDef, existing: dict | None, dimension: int
                         ) -> tuple[np.ndarray | None, str | None, int]:
    """The collection's field vectors (field_vectors.py; what the field texts are: indices.field_plan),
    their hash and how many fields were embedded for them.

    A profile changes with nearly every document (its terms, its summary, its counts) while its fields
    rarely do: the stored matrix is kept as it is when the field texts are the same, and when they are
    not, only the fields it lacks are embedded (its rows are reused when the stored hash says which
    texts, by which model, they are the vectors of).
    """
    texts = [f.text for f in field_plan(index)]
    field_hash = fv.texts_hash(embedder.model_id, texts) if texts else None
    previous: dict[str, np.ndarray] = {}
    if existing is not None and existing["field_hash"]:
        old = [f.text for f in field_plan(IndexDef(index.name, "", tuple(existing["fields"] or ()), "collection"))]
        matrix = fv.unpack(existing["field_vectors"], len(old), dimension)
        if matrix is not None and existing["field_hash"] == fv.texts_hash(embedder.model_id, old):
            previous = dict(zip(old, matrix))
    matrix, embedded = await fv.embed_changed(embedder, texts, previous)
    return matrix, field_hash, embedded


async def refresh_due(db, embedder, kv, *, debounce: float = DEBOUNCE_SECONDS,
                      max_wait: float = MAX_WAIT_SECONDS) -> int:
    """Recompute the collections whose changes are due; how many were recomputed."""
    due = await db.fetch(SQL["changes_due"], {"debounce": debounce, "max_wait": max_wait, "limit": BATCH})
    for change in due:
        started = time.perf_counter()
        outcome = await refresh(db, embedder, kv, change["entity_id"], change["name"])
        await db.execute(SQL["change_done"], change)
        log.info("collection %s/%s: %s (%.1f ms)", change["entity_id"], change["name"], outcome,
                 (time.perf_counter() - started) * 1000)
    return len(due)


class CollectionRefresher:
    """The ingest worker's background task that keeps collection profiles current."""

    def __init__(self, db, embedder, kv, *, poll: float = POLL_SECONDS) -> None:
        self.db, self.embedder, self.kv, self.poll = db, embedder, kv, poll

    async def run(self) -> None:
        while True:
            try:
                if await refresh_due(self.db, self.embedder, self.kv) == BATCH:
                    continue   # more are due: no pause
            except asyncio.CancelledError:
                raise
            except Exception:
                # the changes stay recorded: the next poll tries again
                log.warning("collection profiles: refresh failed", exc_info=True)
            await asyncio.sleep(self.poll)


# -- routes ------------------------------------------------------------------------------------

def _shape(row: dict) -> dict:
    profile = row.pop("profile", None) or {}
    fields = row.pop("fields", None) or []
    return {**row, "profile": {**profile, "fields": fields} if profile else None}


async def list_collections(db, entity_id: str) -> dict:
    rows = await db.fetch(SQL["list"], {"entity_id": entity_id, "name": None})
    return {"entity_id": entity_id, "count": len(rows), "collections": [_shape(r) for r in rows]}


async def get_collection(db, entity_id: str, name: str) -> dict:
    rows = await db.fetch(SQL["list"], {"entity_id": entity_id, "name": name})
    if not rows:
        raise NotFound(f"no collection {name!r} for entity {entity_id!r}", field="name")
    return {"entity_id": entity_id, **_shape(rows[0])}


async def set_description(db, embedder, kv, entity_id: str, name: str, description: str) -> dict:
    """Store the description, then recompute the descriptor at once (selection sees it on return).

    A new name registers a collection: it counts toward the entity's limit of indices, checked under
    the same per-entity lock as index registrations."""
    async with db.transaction() as conn:
        await conn.execute(TOOLS_SQL["registry_lock"], {"kind": "indices", "entity_id": entity_id})
        await conn.execute(SQL["lock"], {"entity_id": entity_id, "name": name})
        others = (await (await conn.execute(TOOLS_SQL["index_count_others"], {
            "entity_id": entity_id, "names": [name]})).fetchone())["n"]
        if others + 1 > MAX_PER_ENTITY:
            raise ValidationError(f"an entity holds at most {MAX_PER_ENTITY} indices and collections", field="name")
        await conn.execute(SQL["set_description"], {"entity_id": entity_id, "name": name, "description": description})
    await refresh(db, embedder, kv, entity_id, name)
    return await get_collection(db, entity_id, name)


# -- search's collections: "auto" --------------------------------------------------------------

AUTO_SHORTLIST = 5


async def choose(db, embedder, entity_ids: list[str], query: str, vector) -> dict:
    """Which collections ``collections: "auto"`` searches: the first choice of index selection when
    it is a confident one, else every document (``searched`` None) with the shortlist reported.

    Not confident means the request names no collection clearly: searching a guessed shortlist
    would hide the answer whenever the guess is wrong, so the search keeps its whole scope.
    Only collections compete (external indices are not searchable here), but a confident
    external first choice still makes the best collection not confident.
    """
    from .indices import MAX_K, SelectRequest, select  # noqa: PLC0415 (indices imports this module's SQL only)

    try:
        ranked = await select(db, embedder, entity_ids, SelectRequest(query, entity_ids, MAX_K), vector=vector)
    except (Conflict, ModelSwitching):  # descriptors of another model than this worker's: not comparable
        return {"mode": "auto", "searched": None, "confident": False, "shortlist": []}
    items = ranked["indices"]
    shortlist = [i["name"] for i in items if i["kind"] == "collection"][:AUTO_SHORTLIST]
    confident = bool(items) and ranked["confident"] and items[0]["kind"] == "collection"
    return {"mode": "auto", "searched": [items[0]["name"]] if confident else None, "confident": confident,
            "shortlist": shortlist}
