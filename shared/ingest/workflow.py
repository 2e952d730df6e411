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
import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np

from .. import copies, faults, holds, language, sqlfiles
from .. import object_keys as keys
from ..bindings.ai import ChatModel, Embedder, local_embedder, local_model
from ..bindings.bucket import Bucket
from ..bindings.database import Database
from ..bindings.kv import KV
from ..cache import Invalidation
from ..errors import BindingError, IngestError, ModelMismatchError, ValidationError
from ..history import writes as history
from ..history.retention import DEFAULT, Retention
from ..token_count import count_tokens
from ..validation import content_hash
from ..workflow import RetryPolicy, Step, Workflow
from .artifacts import ArtifactStore
from .chunking import Chunk, Chunker
from .diff import DiffPlan, StoredChunk, plan
from .embedding import EmbeddingBatcher, decode_vectors, encode_vectors
from .enrich import enrich_chunks
from .extract import extract
from .grouped import DocumentWrite, GroupedWriter
from .summary import summarize

log = logging.getLogger(__name__)
T = TypeVar("T", bound="StepOutput")
SQL = sqlfiles.load("ingest.sql")

class StepName(StrEnum):
    """The workflow's steps: each name is its durable checkpoint key, written here only."""

    EXTRACT = "extract"
    CHUNK = "chunk"
    DIFF = "diff"
    EMBED = "embed"
    SUMMARIZE = "summarize"
    UPSERT = "upsert"
    DELETE_STALE = "delete-stale"


POLICIES = {
    StepName.EXTRACT: RetryPolicy(limit=3, delay=0.5),
    StepName.CHUNK: RetryPolicy(limit=2, delay=0.2),
    StepName.DIFF: RetryPolicy(limit=3, delay=0.5),
    StepName.EMBED: RetryPolicy(limit=3, delay=1.0, max_delay=10.0),
    StepName.SUMMARIZE: RetryPolicy(limit=2, delay=1.0),
    StepName.UPSERT: RetryPolicy(limit=5, delay=0.5, max_delay=5.0),
    StepName.DELETE_STALE: RetryPolicy(limit=3, delay=0.5),
}
_CHUNK_NAMESPACE = uuid.UUID("8f0b5c1e-4f8a-4d53-9a51-6c0a1d2e3f47")


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
    expected_size: int | None = None    # what the upload declared (or sent): the object must be exactly that

    def to_event(self) -> dict:
        return asdict(self)


# --- what each step hands to the next: typed, with an explicit JSON form (the checkpoint) ---------


class StepOutput:
    """A step's result: ``to_json`` is what the engine checkpoints, ``from_json`` what a replay gets back."""

    def to_json(self) -> dict:
        return asdict(self)  # type: ignore[call-overload]  # every step output is a dataclass

    @classmethod
    def from_json(cls, data: dict):
        return cls(**data)

    def artifact_keys(self) -> list[str]:
        """Bucket keys of the artifacts this output points at (deleted once the run is over)."""
        fields = asdict(self)  # type: ignore[call-overload]
        return [value["key"] for value in fields.values() if isinstance(value, dict) and "key" in value]


@dataclass(frozen=True)
class Extracted(StepOutput):
    size_bytes: int
    content_hash: str
    unchanged: bool = False            # the same bytes as the live version: steps 2-5 are skipped
    text: dict | None = None           # artifact reference of the extracted text
    chars: int = 0
    title: str | None = None
    etag: str | None = None            # the object's ETag as read: a later change behind the ready version shows


@dataclass(frozen=True)
class Chunked(StepOutput):
    chunks: dict                       # artifact reference of the chunk rows
    count: int


@dataclass(frozen=True)
class Diffed(StepOutput):
    plan: dict                         # artifact reference of the DiffPlan
    embed: int
    reused: int
    moved: int
    stale: int


@dataclass(frozen=True)
class Embedded(StepOutput):
    vectors: dict                      # artifact reference of the float32 vectors
    count: int
    model_id: str
    dimension: int


@dataclass(frozen=True)
class Summarized(StepOutput):
    summary: str
    method: str
    enrichment: dict | None = None     # artifact reference: {position: keywords and questions} (ENRICH_CHUNKS)


@dataclass(frozen=True)
class Upserted(StepOutput):
    outcome: str                       # ready | deleted | superseded
    current_version: int | None = None
    chunk_count: int = 0
    embedded: int = 0
    reused: int = 0
    moved: int = 0
    stale: int = 0
    unchanged: bool = False
    cache_entries_invalidated: int = 0
    replaced_version: int | None = None
    replaced_object: str | None = None


@dataclass(frozen=True)
class StaleDeleted(StepOutput):
    objects_deleted: int
    artifacts_deleted: int
    runs_deleted: int


def chunk_id(p: IngestParams, position: int) -> str:
    """Deterministic id of a newly embedded chunk: the same version always writes the same rows."""
    return str(uuid.uuid5(_CHUNK_NAMESPACE, f"{p.entity_id}/{p.document_id}/{p.generation}/{p.version}/{position}"))


@dataclass(frozen=True)
class IngestSettings:
    chunk_tokens: int
    chunk_overlap_tokens: int
    summary_sentences: int
    max_document_bytes: int
    max_retries: int           # of the queue consumer: delivery max_retries + 1 is the last one
    enrich_chunks: bool = False  # LLM keywords and questions per new chunk (shared/ingest/enrich.py)
    max_runs: int = 128        # runs in flight in one process (MAX_RUNS), across its queue batches
    history: Retention = DEFAULT  # of document history: HISTORY_VERSIONS, HISTORY_DAYS



@dataclass(frozen=True)
class JobResources:
    """What a run's steps work with, given once by the ingest worker's start-up (``IngestService``)."""

    db: Database
    bucket: Bucket
    kv: KV
    embedder: Embedder
    llm: ChatModel | None
    settings: IngestSettings
    chunker: Chunker
    batcher: EmbeddingBatcher
    writer: GroupedWriter
    record_executed: Callable[[str, list[str]], None]  # run id, the steps that really ran here (GET /runs)


class IngestJob:
    """The step bodies for one run; each returns its step's typed output (a StepOutput)."""

    def __init__(self, resources: JobResources, p: IngestParams) -> None:
        self.resources = resources
        self.settings = resources.settings
        self.p = p
        self.db = resources.db
        self.bucket = resources.bucket
        self.embedder = resources.embedder
        self.artifacts = ArtifactStore(resources.bucket, keys.run_artifacts_prefix(p.entity_id, p.document_id,
                                                                                  p.version, p.generation))
        self.where = {"entity_id": p.entity_id, "document_id": p.document_id}

    async def extract(self) -> Extracted:
        limit = self.settings.max_document_bytes
        size = self.p.size_bytes
        if size is None:  # no event said how big it is: ask before reading it
            info = await self.bucket.head(self.p.object_key)
            size = info.size if info is not None else 0
        if size > limit:
            raise IngestError(f"the file is {size} bytes; the limit is {limit} bytes (MAX_DOCUMENT_BYTES)")
        found = await self.bucket.read(self.p.object_key)
        if found is None:
            raise IngestError(f"the uploaded object {self.p.object_key} is missing; upload the document again")
        data, info = found
        if len(data) > limit:
            raise IngestError(f"the file is {len(data)} bytes; the limit is {limit} bytes (MAX_DOCUMENT_BYTES)")
        if self.p.expected_size is not None and len(data) != self.p.expected_size:
            # Cut, padded or replaced behind the version's back: never index what was not uploaded.
            raise IngestError(f"the uploaded object is {len(data)} bytes but this version declared "
                              f"{self.p.expected_size}; upload the document again")
        digest = content_hash(data)
        # The ETag S3 sent with these very bytes (no second request, and no window in which the
        # object could change between reading it and asking for its ETag).
        etag = info.etag or None
        if digest == self.p.previous_hash:
            # The same bytes as the live version: its chunks, vectors and summary stand as they are.
            return Extracted(size_bytes=len(data), content_hash=digest, unchanged=True, etag=etag)
        extracted = await asyncio.to_thread(extract, data, self.p.content_type)
        return Extracted(text=await self.artifacts.save_text("text.txt", extracted.text), chars=len(extracted.text),
                         size_bytes=len(data), content_hash=digest, title=extracted.title, etag=etag)

    async def chunk(self, extracted: Extracted) -> Chunked:
        text = await self.artifacts.load_text(extracted.text)
        chunks = await asyncio.to_thread(self.resources.chunker.split, text,
                                         markdown=self.p.content_type == "text/markdown")
        if not chunks:
            raise IngestError("the document's text produced no chunks")
        return Chunked(chunks=await self.artifacts.save_json("chunks.json", [c.to_row() for c in chunks]),
                       count=len(chunks))

    async def load_chunks(self, chunked: Chunked) -> list[Chunk]:
        rows = await self.artifacts.load_json(chunked.chunks)
        return [Chunk.from_row(i, row) for i, row in enumerate(rows)]

    async def diff(self, chunked: Chunked) -> Diffed:
        chunks = await self.load_chunks(chunked)
        stored: list[StoredChunk] = []
        if self.p.previous_hash is not None:  # chunks exist only once a version was ready
            stored = [StoredChunk(r["id"], r["position"], r["start_char"], r["end_char"], r["content_hash"],
                                  r["model_id"]) for r in await self.db.fetch(SQL["stored_chunks"], self.where)]
        # a stored chunk is reused only with a vector of its entity's model
        model_id = await self.entity_model() if stored else self.embedder.model_id
        result = plan(chunks, stored, model_id=model_id, new_id=lambda pos: chunk_id(self.p, pos))
        return Diffed(plan=await self.artifacts.save_json("diff.json", result.to_json()), embed=len(result.embed),
                      reused=result.reused, moved=len(result.moved), stale=len(result.stale))

    async def embed(self, extracted: Extracted, chunked: Chunked, diffed: Diffed) -> Embedded:
        result = DiffPlan.from_json(await self.artifacts.load_json(diffed.plan))
        model_id = await self.entity_model() if result.embed else self.embedder.model_id
        vectors = np.zeros((0, self.embedder.dimension), np.float32)
        if result.embed:
            text = await self.artifacts.load_text(extracted.text)
            chunks = await self.load_chunks(chunked)
            texts = [chunks[pos].content(text) for pos in result.embed]
            if model_id != self.embedder.model_id:  # an entity served by another model: its own calls
                vectors = await (await _serving_embedder(model_id, self.embedder)).embed(texts)
            else:
                batcher = self.resources.batcher
                parts = []
                for start in range(0, len(texts), batcher.max_texts):  # big documents go in slices, others interleave
                    parts.append(await batcher.embed(texts[start:start + batcher.max_texts]))
                vectors = np.concatenate(parts)
        if vectors.shape != (len(result.embed), self.embedder.dimension):
            raise ModelMismatchError(f"embedder returned {vectors.shape}, expected "
                                     f"({len(result.embed)}, {self.embedder.dimension})")
        return Embedded(vectors=await self.artifacts.save_bytes("vectors.f32", encode_vectors(vectors)),
                        count=len(result.embed), model_id=model_id, dimension=self.embedder.dimension)

    async def entity_model(self) -> str:
        """The model serving this document's entity: the deployment's, or its own after an entity's cutover."""
        row = await self.db.fetchone(SQL["entity_model"], {"entity_id": self.p.entity_id})
        return row["model_id"] if row else self.embedder.model_id

    async def summarize(self, extracted: Extracted, chunked: Chunked, diffed: Diffed) -> Summarized:
        text = await self.artifacts.load_text(extracted.text)
        summary, method = await summarize(text, n=self.settings.summary_sentences, llm=self.resources.llm,
                                          title=extracted.title or "")
        enrichment = None
        if self.settings.enrich_chunks and self.resources.llm is not None:
            # keywords and questions for the chunks this version adds (reused ones keep theirs)
            result = DiffPlan.from_json(await self.artifacts.load_json(diffed.plan))
            chunks = await self.load_chunks(chunked)
            generated = await enrich_chunks(self.resources.llm, [chunks[pos].content(text) for pos in result.embed])
            enrichment = await self.artifacts.save_json("enrichment.json", {
                str(pos): value for pos, value in zip(result.embed, generated, strict=True) if value})
        return Summarized(summary=summary, method=method, enrichment=enrichment)

    async def _lock_current(self, conn) -> tuple[dict | None, Upserted | None]:
        """Lock the document row for the commit: (row, None) while this run's version is still the
        document's, else (row, the outcome: deleted or superseded) and nothing may be written."""
        row = await (await conn.execute(SQL["lock_document"], self.where)).fetchone()
        if row is None or row["generation"] != self.p.generation:
            return row, Upserted(outcome="deleted")
        if row["version"] != self.p.version:
            return row, Upserted(outcome="superseded", current_version=row["version"])
        return row, None

    async def _replaced(self, conn, row: dict) -> dict:
        """The live version this run replaces, and its object (read from that version's run)."""
        if row["ready_version"] is None:
            return {"replaced_version": None, "replaced_object": None}
        previous = keys.run_id(self.p.entity_id, self.p.document_id, row["ready_version"], self.p.generation)
        found = await (await conn.execute(SQL["run_object_key"], {"run_id": previous})).fetchone()
        return {"replaced_version": row["ready_version"], "replaced_object": found["object_key"] if found else None}

    async def upsert(self, extracted: Extracted, chunked: Chunked, diffed: Diffed, embedded: Embedded,
                     summarized: Summarized) -> Upserted:
        p = self.p
        result = DiffPlan.from_json(await self.artifacts.load_json(diffed.plan))
        chunks = await self.load_chunks(chunked)
        vectors = decode_vectors(await self.artifacts.load_bytes(embedded.vectors), embedded.dimension)
        text = await self.artifacts.load_text(extracted.text) if result.embed else ""
        model_id = embedded.model_id
        serving = await self.entity_model() if result.embed else None
        if serving and serving != model_id:
            # the entity's model changed since the embed step (a cutover): its vectors are embedded again
            model_id = serving
            vectors = await (await _serving_embedder(model_id, self.embedder)).embed(
                [chunks[pos].content(text) for pos in result.embed])
        # full text in each new chunk's language (a reused chunk keeps the one it was stored with), and
        # what trajectories read of each instead of hashing and counting its text at every step
        contents = [chunks[pos].content(text) for pos in result.embed]
        languages, signatures = await asyncio.to_thread(_analyse, text, contents)
        enriched = await self.artifacts.load_json(summarized.enrichment) if summarized.enrichment else {}
        new_rows = [(p.entity_id, uuid.UUID(result.ids[pos]), p.document_id, p.version, pos, chunks[pos].start,
                     chunks[pos].end, chunks[pos].content(text), chunks[pos].hash, chunks[pos].tokens,
                     model_id, vectors[i], languages[i].language, languages[i].text_config,
                     languages[i].segmented, enriched.get(str(pos)), *signatures[i])
                    for i, pos in enumerate(result.embed)]
        moved = set(result.moved)
        moves = [{"entity_id": p.entity_id, "id": cid, "position": pos, "start": chunks[pos].start,
                  "end": chunks[pos].end} for pos, cid in enumerate(result.ids) if cid in moved]
        # Committed with the upserts of the other runs in flight in this process (grouped.py); the
        # outcome is still this document's alone.
        committed = await self.resources.writer.commit(DocumentWrite(
            entity_id=p.entity_id, document_id=p.document_id, version=p.version, generation=p.generation,
            ids=result.ids, embedded_ids={result.ids[pos] for pos in result.embed}, rows=new_rows, moves=moves,
            finish={"chunk_count": len(result.ids), "embedded": len(result.embed), "reused": result.reused,
                    "summary": summarized.summary, "content_hash": extracted.content_hash,
                    "size_bytes": extracted.size_bytes, "found_title": extracted.title, "etag": extracted.etag}))
        if committed["outcome"] != "ready":
            return Upserted(**committed)
        return Upserted(chunk_count=len(result.ids), embedded=len(result.embed), reused=result.reused,
                        moved=len(result.moved), stale=len(result.stale), **committed)

    async def reuse_live(self, extracted: Extracted) -> Upserted:
        """``upsert`` for identical bytes: the live version's chunks become this version's."""
        p = self.p
        ids: list[str] = []
        replaced: dict = {}
        async with Invalidation(self.resources.kv) as invalidation:
            async with self.db.transaction() as conn:
                row, gone = await self._lock_current(conn)
                if gone is not None:
                    return gone
                assert row is not None  # _lock_current: a row, or what the run returns without one
                if row["ready_version"] is None or row["content_hash"] != extracted.content_hash:
                    raise IngestError("the live version changed since extract; upload the document again")
                replaced = await self._replaced(conn, row)
                ids = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], self.where)).fetchall()]
                # Title, tags or source may have changed with this upload: cached results show them.
                await invalidation.begin([p.entity_id], ids)
                await conn.execute(SQL["reuse_live_version"], {**self.where, "size_bytes": extracted.size_bytes,
                                                               "etag": extracted.etag})
                async with conn.cursor() as cur:  # the same chunks, now under this version's number
                    await history.record(cur, [history.NewVersion(p.entity_id, p.document_id, p.version, ids,
                                                                  replaces=True)], self.settings.history)
        return Upserted(outcome="ready", chunk_count=len(ids), reused=len(ids), unchanged=True,
                        cache_entries_invalidated=invalidation.dropped, **replaced)

    async def delete_stale(self, upserted: Upserted, artifact_keys: list[str]) -> StaleDeleted:
        p = self.p
        objects: list[str] = []
        runs = 0
        if upserted.outcome == "ready":
            if upserted.replaced_version == p.version - 1 and upserted.replaced_object:
                # The usual update: the previous version was live, no other object can be left.
                if upserted.replaced_object != p.object_key:
                    objects.append(upserted.replaced_object)
            elif p.version > 1:  # versions that failed or were superseded may have left objects
                for info in await self.bucket.list(keys.document_objects_prefix(p.entity_id, p.document_id)):
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
            await self.bucket.delete(*doomed)
        return StaleDeleted(objects_deleted=len(objects), artifacts_deleted=len(artifact_keys), runs_deleted=runs)


def _analyse(text: str, contents: list[str]) -> tuple[list, list[tuple[str, bytes | None, int]]]:
    """Each new chunk's language, and its copy signature and context tokens (migration 0031)."""
    return language.analyse(text, contents), [(*copies.signature(c), count_tokens(c)) for c in contents]


async def _serving_embedder(model_id: str, embedder: Embedder) -> Embedder:
    """An embedder of ``model_id``: the run's own, or the packaged model of that id (loaded once per
    process; a worker that followed the cutover has it already)."""
    if embedder.model_id == model_id:
        return embedder
    try:
        return await asyncio.to_thread(local_embedder, 64, local_model(model_id).name)
    except BindingError:
        raise IngestError(f"the serving model is now {model_id!r}, which this worker cannot load") from None


class IngestDocument(Workflow):
    async def run(self, event: dict, step: Step) -> Any:
        p = IngestParams(**event)
        resources: JobResources = self.service
        job = IngestJob(resources, p)

        async def do(step_name: StepName, body, output: type[T]) -> T:
            name = str(step_name)  # its value, as checkpoints, faults and logs name it

            async def attempt():
                faults.fail(name, p.document_id)
                await faults.slow(name, p.document_id)
                result = await body()
                faults.exit_in(name, p.document_id)
                return result.to_json()  # the checkpoint: what a replay hands back

            await holds.point(resources.db, f"ingest:{name}", p.entity_id, p.document_id)
            stored = await step.do(name, attempt, retries=POLICIES[step_name])
            faults.exit_after(name, p.document_id, executed=name in step.executed)
            return output.from_json(stored)

        try:
            extracted = await do(StepName.EXTRACT, job.extract, Extracted)
            if extracted.unchanged:
                resources.batcher.arrived()  # nothing to embed: the batcher need not wait for it
                upserted = await do(StepName.UPSERT, lambda: job.reuse_live(extracted), Upserted)
                await do(StepName.DELETE_STALE, lambda: job.delete_stale(upserted, []), StaleDeleted)
                return upserted.to_json()
            chunked = await do(StepName.CHUNK, lambda: job.chunk(extracted), Chunked)
            diffed = await do(StepName.DIFF, lambda: job.diff(chunked), Diffed)
            embedded = await do(StepName.EMBED, lambda: job.embed(extracted, chunked, diffed), Embedded)
            resources.batcher.arrived()  # replayed, or nothing new to embed: not coming any more
            summarized = await do(StepName.SUMMARIZE, lambda: job.summarize(extracted, chunked, diffed), Summarized)
            upserted = await do(StepName.UPSERT, lambda: job.upsert(extracted, chunked, diffed, embedded, summarized),
                                Upserted)
            written = [key for output in (extracted, chunked, diffed, embedded, summarized)
                       for key in output.artifact_keys()]
            await do(StepName.DELETE_STALE, lambda: job.delete_stale(upserted, written), StaleDeleted)
        finally:
            resources.record_executed(p.run_id, list(step.executed))
        return upserted.to_json()
