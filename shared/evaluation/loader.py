"""Put documents and chunks straight into the database, bypassing upload and ingestion.

Two uses: tests that need searchable chunks with real embeddings without waiting
for the ingestion pipeline, and the EXPLAIN/load scripts that need tens of
thousands of chunks fast (binary COPY). Rows look exactly like what ingestion
writes: a ready document (``ready_version = version``) and its chunks at that
version, so search treats them the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from .. import copies, sqlfiles
from ..bindings.database import Database
from ..token_count import count_tokens

SQL = sqlfiles.load("benchmark.sql")
CHUNK_COLUMNS = ("entity_id", "document_id", "version", "position", "start_char", "end_char", "content",
                 "content_hash", "token_count", "model_id", "embedding", "copy_fingerprint", "copy_simhash",
                 "context_tokens")
CHUNK_TYPES = ("text", "text", "int4", "int4", "int4", "int4", "text", "text", "int4", "text", "vector", "text",
               "bytea", "int4")


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
        # what ingestion stores of each chunk for trajectories (migration 0031), as it stores it
        rows.append((entity_id, doc.document_id, doc.version, position, start, start + len(text), text,
                     content_hash(text), max(1, len(text.split())), model_id, vector, *copies.signature(text),
                     count_tokens(text)))
        start += len(text) + 2
    return rows


async def ensure_entity(db: Database, entity_id: str, kind: str = "user") -> None:
    await db.execute(SQL["loader_ensure_entity"], {"id": entity_id, "kind": kind})


async def upsert_documents(db: Database, entity_id: str, docs: Sequence[SeedDocument]) -> None:
    """Document rows, ready at their version (replaces an existing document and its chunks)."""
    async with db.transaction() as conn, conn.cursor() as cur:
        await cur.executemany(SQL["loader_delete_document_chunks"],
                              [{"entity": entity_id, "id": doc.document_id} for doc in docs])
        await cur.executemany(SQL["loader_upsert_document"], [{
            "entity": entity_id, "id": doc.document_id, "version": doc.version, "title": doc.title,
            "source": doc.source, "tags": doc.tags, "summary": doc.summary, "chunks": len(doc.chunks),
            "size": sum(len(c) for c in doc.chunks),
            "object_key": f"docs/{entity_id}/{doc.document_id}/v{doc.version}",
            "created_at": doc.created_at, "updated_at": doc.updated_at} for doc in docs])


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


# --- synthetic corpora for plans and load (real text, random vectors) ----------------------

SOURCES = ("wiki", "notes", "tickets", "blog")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def read_passages(path: Path, limit: int | None = None) -> list[str]:
    """Texts of a BEIR-style ``corpus.jsonl`` (one ``{"text": ...}`` object a line)."""
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line).get("text", "").strip()
            if text:
                texts.append(text)
                if limit and len(texts) >= limit:
                    break
    return texts


def varied(text: str, n: int) -> str:
    """The n-th variant of a passage: sentences rotated, so repeats are not byte-identical."""
    sentences = _SENTENCE.split(text)
    shift = n % len(sentences)
    return " ".join(sentences[shift:] + sentences[:shift])


def random_unit_vectors(rng: np.random.Generator, count: int, dimension: int) -> np.ndarray:
    vectors = rng.standard_normal((count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def synthetic_documents(texts: Sequence[str], chunks: int, *, chunks_per_document: int = 5, offset: int = 0,
                        prefix: str = "doc") -> Iterator[SeedDocument]:
    """Documents of ``chunks_per_document`` passages each, cycling through ``texts`` with variations;
    tags ``t0``..``t19`` and the four sources spread evenly, so each tag filter keeps ~5% of them."""
    made = 0
    number = 0
    while made < chunks:
        size = min(chunks_per_document, chunks - made)
        parts = [varied(texts[(offset + made + i) % len(texts)], (offset + made + i) // len(texts)) for i in range(size)]
        yield SeedDocument(document_id=f"{prefix}{number}", chunks=parts, title=parts[0][:60],
                           source=SOURCES[number % len(SOURCES)], tags=[f"t{number % 20}"])
        made += size
        number += 1


def synthetic_texts(texts: Sequence[str], chunks: int, *, offset: int = 0) -> list[str]:
    """The chunk texts ``load_synthetic`` writes, in its order (what ``vectors`` must follow)."""
    return [text for doc in synthetic_documents(texts, chunks, offset=offset) for text in doc.chunks]


def cached_vectors(texts: Sequence[str], embed: Callable[[list[str]], np.ndarray], folder: Path, *,
                   identity: str) -> np.ndarray:
    """The vectors ``embed`` makes of ``texts``, kept in ``folder`` under a key of ``identity`` (the model,
    say) and the texts themselves: a benchmark's corpus is embedded once per machine, not at every run
    (12,000 chunks are ~4 minutes of the model on two cores)."""
    digest = hashlib.sha256(identity.encode())
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    path = folder / f"vectors-{digest.hexdigest()[:24]}.npy"
    if path.exists():
        try:
            vectors = np.load(path)
        except (OSError, ValueError):  # damaged (a full disk, a hand edit): embedded again below
            vectors = None
        if vectors is not None and vectors.ndim == 2 and vectors.shape[0] == len(texts):
            return vectors
    vectors = np.asarray(embed(list(texts)), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"embed returned {vectors.shape} for {len(texts)} texts")
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{path.stem}.{os.getpid()}.npy"  # a run killed mid-write leaves no short file behind
    np.save(partial, vectors)
    os.replace(partial, path)
    return vectors


async def load_synthetic(db: Database, entity_id: str, texts: Sequence[str], chunks: int, *, model_id: str,
                         dimension: int, seed: int = 0, kind: str = "user", batch_documents: int = 500,
                         offset: int = 0, vectors: np.ndarray | None = None) -> int:
    """``chunks`` chunks of real text into ``entity_id`` (binary COPY), with ``vectors`` (one per chunk,
    in ``synthetic_texts`` order: the real model's, say) or else random unit vectors."""
    if vectors is not None and (vectors.ndim != 2 or vectors.shape != (chunks, dimension)):
        raise ValueError(f"vectors of shape {vectors.shape} for {chunks} chunks of dimension {dimension}")
    await ensure_entity(db, entity_id, kind)
    rng = np.random.default_rng(seed)
    written = 0
    batch: list[SeedDocument] = []

    async def flush() -> int:
        await upsert_documents(db, entity_id, batch)
        count = sum(len(d.chunks) for d in batch)
        batch_vectors = (random_unit_vectors(rng, count, dimension) if vectors is None
                         else vectors[written:written + count])
        rows, at = [], 0
        for doc in batch:
            rows.extend(chunk_rows(entity_id, doc, batch_vectors[at:at + len(doc.chunks)], model_id))
            at += len(doc.chunks)
        return await copy_chunks(db, rows)

    for doc in synthetic_documents(texts, chunks, offset=offset):
        batch.append(doc)
        if len(batch) >= batch_documents:
            written += await flush()
            batch = []
    if batch:
        written += await flush()
    return written
