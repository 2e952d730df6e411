"""``IngestDocument``: the durable ingestion workflow, one run per document version.

Steps (each checkpointed, each with its own retry policy):

1. ``extract``      object → normalized text (permanent content problems raise IngestError)
2. ``chunk``        recursive chunking; positions, offsets, token counts, content hashes
3. ``diff``         hash-diff against the stored chunks: reuse, move, embed, stale
4. ``embed``        vectors for new/changed chunks only, batched across concurrent runs
5. ``summarize``    extractive summary (or the configured LLM's)
6. ``upsert``       ONE transaction: insert new chunks, move reused ones, delete stale
                    ones, mark the document ready. Cache invalidation brackets the
                    commit (``begin_invalidation`` before, ``end_invalidation`` after), so
                    no reader ever sees a mix of versions and no cached result keeps a
                    removed chunk.
7. ``delete-stale`` what the new version made stale outside the database: objects of
                    earlier versions, runs of earlier versions, this run's artifacts.

Bytes identical to the live version's (sha256) skip steps 2-5: ``upsert`` then just
makes the live chunks this version's.

Large step outputs live in the bucket (see ``artifacts``); checkpoints hold keys.
Chunk contents never travel between steps: they are offsets into the text.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import cache, language, sqlfiles
from ..errors import IngestError, ModelMismatchError, ValidationError
from ..workflow import RetryPolicy, Step, Workflow
from . import faults, keys
from .artifacts import ArtifactStore
from .chunking import Chunk, chunker_for
from .diff import DiffPlan, StoredChunk, plan
from .embedding import batcher_for, decode_vectors, encode_vectors
from .extract import extract
from .summary import extractive_summary, llm_summary

log = logging.getLogger(__name__)
SQL = sqlfiles.load("ingest.sql")

STEPS = ("extract", "chunk", "diff", "embed", "summarize", "upsert", "delete-stale")
POLICIES = {
    "extract": RetryPolicy(limit=3, delay=0.5),
    "chunk": RetryPolicy(limit=2, delay=0.2),
    "diff": RetryPolicy(limit=3, delay=0.5),
    "embed": RetryPolicy(limit=3, delay=1.0, max_delay=10.0),
    "summarize": RetryPolicy(limit=2, delay=1.0),
    "upsert": RetryPolicy(limit=5, delay=0.5, max_delay=5.0),
    "delete-stale": RetryPolicy(limit=3, delay=0.5),
}
_CHUNK_NAMESPACE = uuid.UUID("8f0b5c1e-4f8a-4d53-9a51-6c0a1d2e3f47")

# run id → the steps each invocation in this process really executed (telemetry and tests).
EXECUTED: OrderedDict[str, list[list[str]]] = OrderedDict()
_EXECUTED_KEEP = 1000


@dataclass(frozen=True)
class IngestParams:
    entity_id: str
    document_id: str
    version: int
    generation: str
    object_key: str
    content_type: str
    run_id: str
    size_bytes: int | None = None       # from the object-created event: refuse a huge file before reading it
    previous_hash: str | None = None    # sha256 of the live version's bytes: identical bytes skip the pipeline

    def to_event(self) -> dict:
        return asdict(self)


def chunk_id(p: IngestParams, position: int) -> str:
    """Deterministic id of a newly embedded chunk: the same version always writes the same rows."""
    return str(uuid.uuid5(_CHUNK_NAMESPACE, f"{p.entity_id}/{p.document_id}/{p.generation}/{p.version}/{position}"))


class IngestJob:
    """The step bodies for one run; every method returns a JSON-serializable checkpoint."""

    def __init__(self, env, p: IngestParams) -> None:
        self.env = env
        self.p = p
        self.db = env.DB
        self.embedder = env.AI.embedder
        self.artifacts = ArtifactStore(env.BUCKET, keys.run_artifacts_prefix(p.entity_id, p.document_id, p.version,
                                                                            p.generation))
        self.where = {"entity_id": p.entity_id, "document_id": p.document_id}

    async def extract(self) -> dict:
        limit = self.env.var("MAX_DOCUMENT_BYTES", int)
        size = self.p.size_bytes
        if size is None:  # no event said how big it is: ask before reading it
            info = await self.env.BUCKET.head(self.p.object_key)
            size = info.size if info is not None else 0
        if size > limit:
            raise IngestError(f"the file is {size} bytes; the limit is {limit} bytes (MAX_DOCUMENT_BYTES)")
        data = await self.env.BUCKET.get(self.p.object_key)
        if data is None:
            raise IngestError(f"the uploaded object {self.p.object_key} is missing; upload the document again")
        if len(data) > limit:
            raise IngestError(f"the file is {len(data)} bytes; the limit is {limit} bytes (MAX_DOCUMENT_BYTES)")
        digest = hashlib.sha256(data).hexdigest()
        if digest == self.p.previous_hash:
            # The same bytes as the live version: its chunks, vectors and summary stand as they are.
            return {"unchanged": True, "size_bytes": len(data), "content_hash": digest}
        extracted = await asyncio.to_thread(extract, data, self.p.content_type)
        return {"text": await self.artifacts.save_text("text.txt", extracted.text), "chars": len(extracted.text),
                "size_bytes": len(data), "content_hash": digest, "title": extracted.title}

    async def chunk(self, extracted: dict) -> dict:
        text = await self.artifacts.load_text(extracted["text"])
        chunker = chunker_for(self.embedder, capacity=self.env.var("CHUNK_TOKENS", int),
                              overlap=self.env.var("CHUNK_OVERLAP_TOKENS", int))
        chunks = await asyncio.to_thread(chunker.split, text, markdown=self.p.content_type == "text/markdown")
        if not chunks:
            raise IngestError("the document's text produced no chunks")
        return {"chunks": await self.artifacts.save_json("chunks.json", [c.to_row() for c in chunks]),
                "count": len(chunks)}

    async def load_chunks(self, chunked: dict) -> list[Chunk]:
        rows = await self.artifacts.load_json(chunked["chunks"])
        return [Chunk.from_row(i, row) for i, row in enumerate(rows)]

    async def diff(self, chunked: dict) -> dict:
        chunks = await self.load_chunks(chunked)
        stored: list[StoredChunk] = []
        if self.p.previous_hash is not None:  # chunks exist only once a version was ready
            stored = [StoredChunk(r["id"], r["position"], r["start_char"], r["end_char"], r["content_hash"],
                                  r["model_id"]) for r in await self.db.fetch(SQL["stored_chunks"], self.where)]
        result = plan(chunks, stored, model_id=self.embedder.model_id, new_id=lambda pos: chunk_id(self.p, pos))
        return {"plan": await self.artifacts.save_json("diff.json", result.to_json()), "embed": len(result.embed),
                "reused": result.reused, "moved": len(result.moved), "stale": len(result.stale)}

    async def embed(self, extracted: dict, chunked: dict, diffed: dict) -> dict:
        result = DiffPlan.from_json(await self.artifacts.load_json(diffed["plan"]))
        vectors = np.zeros((0, self.embedder.dimension), np.float32)
        if result.embed:
            text = await self.artifacts.load_text(extracted["text"])
            chunks = await self.load_chunks(chunked)
            texts = [chunks[pos].content(text) for pos in result.embed]
            batcher = batcher_for(self.embedder)
            parts = []
            for start in range(0, len(texts), batcher.max_texts):  # big documents go in slices, others interleave
                parts.append(await batcher.embed(texts[start:start + batcher.max_texts]))
            vectors = np.concatenate(parts)
        if vectors.shape != (len(result.embed), self.embedder.dimension):
            raise ModelMismatchError(f"embedder returned {vectors.shape}, expected "
                                     f"({len(result.embed)}, {self.embedder.dimension})")
        return {"vectors": await self.artifacts.save_bytes("vectors.f32", encode_vectors(vectors)),
                "count": len(result.embed), "model_id": self.embedder.model_id, "dimension": self.embedder.dimension}

    async def summarize(self, extracted: dict) -> dict:
        text = await self.artifacts.load_text(extracted["text"])
        n = self.env.var("SUMMARY_SENTENCES", int)
        llm = getattr(self.env.AI, "llm", None)
        if llm is not None:
            try:
                return {"summary": await llm_summary(llm, text, title=extracted["title"], sentences_hint=n),
                        "method": f"llm:{llm.model_id}"}
            except Exception:  # a summary is not worth failing the document for
                log.warning("LLM summary of %s failed; using the extractive one", self.p.run_id, exc_info=True)
        return {"summary": await asyncio.to_thread(extractive_summary, text, n), "method": "extractive"}

    async def _replaced(self, conn, row: dict) -> dict:
        """The live version this run replaces, and its object (read from that version's run)."""
        if row["ready_version"] is None:
            return {"replaced_version": None, "replaced_object": None}
        previous = keys.run_id(self.p.entity_id, self.p.document_id, row["ready_version"], self.p.generation)
        found = await (await conn.execute(SQL["run_object_key"], {"run_id": previous})).fetchone()
        return {"replaced_version": row["ready_version"], "replaced_object": found["object_key"] if found else None}

    async def upsert(self, extracted: dict, chunked: dict, diffed: dict, embedded: dict, summarized: dict) -> dict:
        p = self.p
        if (embedded["model_id"], embedded["dimension"]) != (self.embedder.model_id, self.embedder.dimension):
            raise ModelMismatchError(f"vectors of this run come from {embedded['model_id']!r}, the worker now "
                                     f"embeds with {self.embedder.model_id!r}; vectors are never mixed")
        result = DiffPlan.from_json(await self.artifacts.load_json(diffed["plan"]))
        chunks = await self.load_chunks(chunked)
        vectors = decode_vectors(await self.artifacts.load_bytes(embedded["vectors"]), embedded["dimension"])
        text = await self.artifacts.load_text(extracted["text"]) if result.embed else ""
        # full text in each new chunk's language (a reused chunk keeps the one it was stored with)
        languages = await asyncio.to_thread(language.analyse, text, [chunks[pos].content(text) for pos in result.embed])
        new_rows = [{"entity_id": p.entity_id, "id": uuid.UUID(result.ids[pos]), "document_id": p.document_id,
                     "version": p.version, "position": pos, "start": chunks[pos].start, "end": chunks[pos].end,
                     "content": chunks[pos].content(text), "hash": chunks[pos].hash, "tokens": chunks[pos].tokens,
                     "model_id": embedded["model_id"], "embedding": vectors[i], "language": languages[i].language,
                     "text_config": languages[i].text_config, "segmented": languages[i].segmented}
                    for i, pos in enumerate(result.embed)]
        moved = set(result.moved)
        moves = [{"entity_id": p.entity_id, "id": cid, "position": pos, "start": chunks[pos].start,
                  "end": chunks[pos].end} for pos, cid in enumerate(result.ids) if cid in moved]
        kv = self.env.KV
        previous: list[str] = []
        replaced: dict = {}
        begun = False
        invalidated = 0
        try:
            async with self.db.transaction() as conn:
                row = await (await conn.execute(SQL["lock_document"], self.where)).fetchone()
                if row is None or row["generation"] != p.generation:
                    return {"outcome": "deleted"}
                if row["version"] != p.version:
                    return {"outcome": "superseded", "current_version": row["version"]}
                replaced = await self._replaced(conn, row)
                live = row["ready_version"] is not None  # no live version, no chunks: a first ingest only adds
                if live:
                    previous = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], self.where)).fetchall()]
                missing = set(result.ids) - set(previous) - {result.ids[pos] for pos in result.embed}
                if missing:  # the stored chunks changed since the diff: a bug or manual edits
                    raise RuntimeError(f"{len(missing)} chunk(s) the diff reused are gone; re-upload the document")
                if live:
                    # Every cached result holding any chunk of this document may now be wrong (content,
                    # positions, title/tags): drop them, and keep new ones from being cached until the commit.
                    invalidated += await asyncio.to_thread(cache.begin_invalidation, kv, [p.entity_id], previous)
                    begun = True
                async with conn.cursor() as cur:
                    if new_rows:
                        await cur.executemany(SQL["insert_chunk"], new_rows)
                    if moves:
                        await cur.executemany(SQL["move_chunk"], moves)
                if live:
                    await conn.execute(SQL["delete_other_chunks"], {**self.where, "keep": result.ids})
                await conn.execute(SQL["finish_document"], {
                    **self.where, "chunk_count": len(result.ids), "embedded": len(result.embed),
                    "reused": result.reused, "summary": summarized["summary"],
                    "content_hash": extracted["content_hash"], "size_bytes": extracted["size_bytes"],
                    "found_title": extracted["title"]})
        finally:
            if begun:
                invalidated += await asyncio.to_thread(cache.end_invalidation, kv, [p.entity_id], previous)
        return {"outcome": "ready", "chunk_count": len(result.ids), "embedded": len(result.embed),
                "reused": result.reused, "moved": len(result.moved), "stale": len(result.stale),
                "cache_entries_invalidated": invalidated, **replaced}

    async def reuse_live(self, extracted: dict) -> dict:
        """``upsert`` for identical bytes: the live version's chunks become this version's."""
        p = self.p
        kv = self.env.KV
        ids: list[str] = []
        replaced: dict = {}
        begun = False
        invalidated = 0
        try:
            async with self.db.transaction() as conn:
                row = await (await conn.execute(SQL["lock_document"], self.where)).fetchone()
                if row is None or row["generation"] != p.generation:
                    return {"outcome": "deleted"}
                if row["version"] != p.version:
                    return {"outcome": "superseded", "current_version": row["version"]}
                if row["ready_version"] is None or row["content_hash"] != extracted["content_hash"]:
                    raise RuntimeError("the live version changed since extract; upload the document again")
                replaced = await self._replaced(conn, row)
                ids = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], self.where)).fetchall()]
                # Title, tags or source may have changed with this upload: cached results show them.
                invalidated += await asyncio.to_thread(cache.begin_invalidation, kv, [p.entity_id], ids)
                begun = True
                await conn.execute(SQL["reuse_live_version"], {**self.where, "size_bytes": extracted["size_bytes"]})
        finally:
            if begun:
                invalidated += await asyncio.to_thread(cache.end_invalidation, kv, [p.entity_id], ids)
        return {"outcome": "ready", "chunk_count": len(ids), "embedded": 0, "reused": len(ids), "moved": 0,
                "stale": 0, "unchanged": True, "cache_entries_invalidated": invalidated, **replaced}

    async def delete_stale(self, upserted: dict, artifact_keys: list[str]) -> dict:
        p = self.p
        objects: list[str] = []
        runs = 0
        if upserted["outcome"] == "ready":
            if upserted.get("replaced_version") == p.version - 1 and upserted.get("replaced_object"):
                # The usual update: the previous version was live, no other object can be left.
                if upserted["replaced_object"] != p.object_key:
                    objects.append(upserted["replaced_object"])
            elif p.version > 1:  # versions that failed or were superseded may have left objects
                for info in await self.env.BUCKET.list(keys.document_objects_prefix(p.entity_id, p.document_id)):
                    try:
                        older = keys.parse_object_key(info.key).version < p.version
                    except ValidationError:
                        older = False  # not a key we wrote: not ours to judge
                    if older:
                        objects.append(info.key)
                runs = await self.db.execute(SQL["delete_old_runs"], {
                    "prefix": keys.run_prefix(p.entity_id, p.document_id), "run_id": p.run_id})
        doomed = objects + artifact_keys
        if doomed:
            await self.env.BUCKET.delete(*doomed)
        return {"objects_deleted": len(objects), "artifacts_deleted": len(artifact_keys), "runs_deleted": runs}


def _artifact_keys(*outputs: dict) -> list[str]:
    found = []
    for output in outputs:
        for value in output.values():
            if isinstance(value, dict) and "key" in value:
                found.append(value["key"])
    return found


class IngestDocument(Workflow):
    async def run(self, event: dict, step: Step) -> Any:
        p = IngestParams(**event)
        job = IngestJob(self.env, p)

        async def do(name: str, body) -> Any:
            async def attempt():
                faults.fail(name, p.document_id)
                output = await body()
                faults.exit_in(name, p.document_id)
                return output

            output = await step.do(name, attempt, retries=POLICIES[name])
            faults.exit_after(name, p.document_id, executed=name in step.executed)
            return output

        try:
            extracted = await do("extract", job.extract)
            if extracted.get("unchanged"):
                upserted = await do("upsert", lambda: job.reuse_live(extracted))
                await do("delete-stale", lambda: job.delete_stale(upserted, []))
                return upserted
            chunked = await do("chunk", lambda: job.chunk(extracted))
            diffed = await do("diff", lambda: job.diff(chunked))
            embedded = await do("embed", lambda: job.embed(extracted, chunked, diffed))
            summarized = await do("summarize", lambda: job.summarize(extracted))
            upserted = await do("upsert", lambda: job.upsert(extracted, chunked, diffed, embedded, summarized))
            keys_written = _artifact_keys(extracted, chunked, diffed, embedded)
            await do("delete-stale", lambda: job.delete_stale(upserted, keys_written))
        finally:
            EXECUTED.setdefault(p.run_id, []).append(list(step.executed))
            EXECUTED.move_to_end(p.run_id)
            while len(EXECUTED) > _EXECUTED_KEEP:
                EXECUTED.popitem(last=False)
        return upserted
