"""Put documents and chunks straight into the database, bypassing upload and ingestion.

Two uses: tests that need searchable chunks with real embeddings without waiting
for the ingestion pipeline, and the EXPLAIN/load scripts that need tens of
thousands of chunks fast (binary COPY). Rows look exactly like what ingestion
writes: a ready document (``ready_version = version``) and its chunks at that
version, so search treats them the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from .. import sqlfiles
from ..bindings.database import Database

SQL = sqlfiles.load("search.sql")
CHUNK_COLUMNS = ("entity_id", "document_id", "version", "position", "start_char", "end_char", "content",
                 "content_hash", "token_count", "model_id", "embedding")
CHUNK_TYPES = ("text", "text", "int4", "int4", "int4", "int4", "text", "text", "int4", "text", "vector")


@dataclass
class SeedDocument:
    """A document given as its chunks (one string each), plus the document fields search filters on."""

    document_id: str
    chunks: list[str]
    title: str = ""
    source: str = "upload"
    tags: list[str] = field(default_factory=list)
    summary: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version: int = 1


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def chunk_rows(entity_id: str, doc: SeedDocument, vectors: np.ndarray, model_id: str) -> list[tuple]:
    """COPY rows for a document's chunks; offsets as if the chunks were joined by blank lines."""
    rows, start = [], 0
    for position, (text, vector) in enumerate(zip(doc.chunks, vectors, strict=True)):
        rows.append((entity_id, doc.document_id, doc.version, position, start, start + len(text), text,
                     content_hash(text), max(1, len(text.split())), model_id, vector))
        start += len(text) + 2
    return rows


async def ensure_entity(db: Database, entity_id: str, kind: str = "user") -> None:
    await db.execute(SQL["loader_ensure_entity"], {"id": entity_id, "kind": kind})


async def upsert_documents(db: Database, entity_id: str, docs: Sequence[SeedDocument]) -> None:
    """Document rows, ready at their version (replaces an existing document and its chunks)."""
    async with db.transaction() as conn:
        for doc in docs:
            await conn.execute(SQL["loader_delete_document_chunks"], {"entity": entity_id, "id": doc.document_id})
            await conn.execute(SQL["loader_upsert_document"], {
                "entity": entity_id, "id": doc.document_id, "version": doc.version, "title": doc.title,
                "source": doc.source, "tags": doc.tags, "summary": doc.summary, "chunks": len(doc.chunks),
                "size": sum(len(c) for c in doc.chunks),
                "object_key": f"docs/{entity_id}/{doc.document_id}/v{doc.version}",
                "created_at": doc.created_at, "updated_at": doc.updated_at})


async def copy_chunks(db: Database, rows: Iterable[tuple]) -> int:
    """Binary COPY of chunk rows (``CHUNK_COLUMNS`` order); returns the number written."""
    written = 0
    async with db.connection() as conn:
        async with conn.cursor() as cur:
            async with cur.copy(SQL["loader_copy_chunks"]) as copy:
                copy.set_types(list(CHUNK_TYPES))
                for row in rows:
                    await copy.write_row(row)
                    written += 1
        await conn.commit()
    return written


async def seed_documents(db: Database, embedder, entity_id: str, docs: Sequence[SeedDocument], *,
                         kind: str = "user") -> dict[str, list[str]]:
    """Entity, documents and chunks with real embeddings; returns chunk ids per document, in order."""
    await ensure_entity(db, entity_id, kind)
    await upsert_documents(db, entity_id, docs)
    texts = [text for doc in docs for text in doc.chunks]
    vectors = await embedder.embed(texts)
    rows, offset = [], 0
    for doc in docs:
        rows.extend(chunk_rows(entity_id, doc, vectors[offset:offset + len(doc.chunks)], embedder.model_id))
        offset += len(doc.chunks)
    await copy_chunks(db, rows)
    found = await db.fetch(SQL["loader_chunk_ids"], {"entity": entity_id, "ids": [d.document_id for d in docs]})
    ids: dict[str, list[str]] = {d.document_id: [] for d in docs}
    for row in found:
        ids[row["document_id"]].append(str(row["id"]))
    return ids
