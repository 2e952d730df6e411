"""The ingest worker's service: object-created events in, one durable workflow run per document version.

Per message the outcome is one of:
- ack, nothing to do: S3's test event, an object outside ``docs/``, a deleted
  document, a version superseded by a newer upload, a version already done;
- ack after the run: the document is ready (or the run found it superseded);
- ack after a permanent failure (``IngestError``): the document is ``failed`` with
  the reason; retrying the same bytes cannot help;
- retry: a transient failure; the run resumes from its last checkpoint on the
  next delivery. On the last delivery the consumer allows (``max_retries``) the
  document is marked ``failed`` with the error first, then the message goes to
  the dead-letter queue. The previous version, if any, stays live: a failure
  never leaves a half-written document.

The messages of a batch run concurrently, so their embedding requests share
model calls (see ``embedding.EmbeddingBatcher``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from dataclasses import dataclass
from datetime import datetime

from .. import holds, sqlfiles
from .. import object_keys as keys
from ..bindings.ai import ChatModel, Embedder
from ..bindings.bucket import Bucket
from ..bindings.database import Database
from ..bindings.kv import KV
from ..bindings.queue import Message
from ..errors import Conflict, EdgeIndexError, IngestError, NotFound, ReplayMismatch, RunDeleted, ValidationError
from ..object_keys import ObjectRef
from ..workflow import WorkflowBinding
from .artifacts import ArtifactStore
from .chunking import Chunker
from .embedding import CALL_FILL, MODEL_CALL_TEXTS, EmbeddingBatcher
from .events import object_refs
from .grouped import GroupedWriter
from .workflow import IngestParams, IngestSettings, JobResources

log = logging.getLogger(__name__)
SQL = sqlfiles.load("ingest.sql")
# A copy of a message whose run another consumer holds comes back after about one visibility
# timeout: time for that run to finish (the copy then acks at once) or for its holder to be gone.
IN_PROGRESS_RETRY_SECONDS = 30.0


@dataclass(frozen=True)
class Outcome:
    action: str                 # "ack" | "retry"
    reason: str
    error: str | None = None
    delay: float | None = None  # seconds before a retried message comes back (None: the consumer's backoff)


def _ack(reason: str) -> Outcome:
    return Outcome("ack", reason)


def _error_text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, EdgeIndexError) else f"{type(exc).__name__}: {exc}"


PER_KEY_KEEP = 50  # latest outcomes / invocations kept per document or run (GET /outcomes, /runs)


class IngestService:
    """What the ingest worker does, given its bindings once at start-up. It also owns what the
    runs of this process share: the chunker (its tokenizer loaded once), the embedding batcher
    (chunks of concurrent runs embedded together), the run limiter, and which steps each run
    really executed here (diagnostics: ``GET /runs``)."""

    EXECUTED_KEEP = 1000

    def __init__(self, *, db: Database, bucket: Bucket, kv: KV, embedder: Embedder, llm: ChatModel | None,
                 workflow: WorkflowBinding, settings: IngestSettings) -> None:
        self.db = db
        self.bucket = bucket
        self.kv = kv
        self.embedder = embedder
        self.llm = llm
        self.workflow = workflow
        self.settings = settings
        self.chunker = Chunker(embedder.tokenizer(), capacity=settings.chunk_tokens,
                               overlap=settings.chunk_overlap_tokens, limit=embedder.max_tokens)
        self.batcher = EmbeddingBatcher(embedder, max_texts=MODEL_CALL_TEXTS, fill=CALL_FILL)
        self.writer = GroupedWriter(db, kv, retention=settings.history)  # the upserts of concurrent runs share transactions
        # Runs at once in this process, whatever the number of batches in flight. A run holds no
        # connection between its statements (every run's lock sits on one session: run_locks.py),
        # so this bound is about memory and the model's input, not the pool.
        self.limiter = asyncio.Semaphore(max(1, settings.max_runs))
        self.executed: OrderedDict[str, list[list[str]]] = OrderedDict()
        # (entity, document) → how each message about it was settled here, in order: what the
        # log says, for tests and operators (GET /outcomes), without reading the log
        self.outcomes: OrderedDict[tuple[str, str], list[dict]] = OrderedDict()
        # (entity, document, version) of every message this process holds, from its receipt (before a
        # run slot) to its outcome: the reconciler does not re-send what is on its way here already
        self._received: Counter[tuple[str, str, int]] = Counter()
        workflow.provide(JobResources(db=db, bucket=bucket, kv=kv, embedder=embedder, llm=llm, settings=settings,
                                      chunker=self.chunker, batcher=self.batcher, writer=self.writer,
                                      record_executed=self.record_executed))

    def receiving(self, key: tuple[str, str, int]) -> bool:
        """Whether this process holds a queue message about this version (reconciler.py)."""
        return self._received[key] > 0

    def record_executed(self, run_id: str, steps: list[str]) -> None:
        _remember(self.executed, run_id, steps, keep=self.EXECUTED_KEEP)

    def record_outcome(self, ref: ObjectRef, outcome: Outcome) -> None:
        _remember(self.outcomes, (ref.entity_id, ref.document_id),
                  {"version": ref.version, "action": outcome.action, "reason": outcome.reason},
                  keep=self.EXECUTED_KEEP)

    async def run_status(self, run_id: str) -> dict:
        """A run's checkpoints, and which steps this process executed for it."""
        status = await self.workflow.get(run_id)
        if status is None:
            raise NotFound(f"no workflow run {run_id!r}", field="id")
        steps = await self.db.fetch(SQL["run_steps"], {"run_id": run_id})
        invocations = await self.db.fetchone(SQL["run_invocations"], {"run_id": run_id})
        return {"id": run_id, "status": status.status, "invocations": invocations["attempts"],
                "current_step": status.current_step, "error": status.error,
                "steps": [{**s, "completed_at": s["completed_at"].isoformat()
                           if isinstance(s["completed_at"], datetime) else s["completed_at"]} for s in steps],
                "executed_here": self.executed.get(run_id, [])}

    async def ingest_object(self, ref: ObjectRef, *, attempts: int, last_attempt: bool) -> Outcome:
        db = self.db
        where = {"entity_id": ref.entity_id, "document_id": ref.document_id}
        await holds.point(db, "ingest:event", ref.entity_id, ref.document_id)
        doc = await db.fetchone(SQL["document_for_event"], where)
        if doc is None or not ref.of_generation(doc["generation"]):
            # The object of a deleted life of this document (its key names the generation): litter that
            # a write racing the DELETE may have left, and that no row will ever point at again.
            await self._remove_litter(ref)
            return _ack("document deleted")
        if doc["version"] > ref.version:
            return _ack(f"superseded by version {doc['version']}")
        if doc["version"] < ref.version:
            log.warning("object %s is newer than its document row (v%d); ignored", ref.key, doc["version"])
            return _ack("unknown version")
        if doc["status"] == "failed":
            return _ack("version already failed")

        p = IngestParams(entity_id=ref.entity_id, document_id=ref.document_id, version=ref.version,
                         generation=doc["generation"], object_key=doc["object_key"] or ref.key,
                         content_type=doc["content_type"], size_bytes=ref.size, expected_size=doc["size_bytes"],
                         previous_hash=doc["content_hash"] if doc["ready_version"] is not None else None,
                         run_id=keys.run_id(ref.entity_id, ref.document_id, ref.version, doc["generation"]))
        # A ready version may still have an unfinished run (it committed just before a crash):
        # create() finishes its remaining steps, and returns at once for a complete run.
        already_ready = doc["status"] == "ready" and doc["ready_version"] == ref.version
        if already_ready and (changed := await self._changed_behind_ready(ref, doc)):
            return _ack(changed)
        if not already_ready and await db.fetchone(SQL["start_processing"], {
                **where, "version": p.version, "generation": p.generation, "run_id": p.run_id}) is None:
            return _ack("document changed meanwhile")
        try:
            run = await self.workflow.create(id=p.run_id, params=p.to_event())
        except (IngestError, ReplayMismatch) as exc:  # retrying cannot help either
            await self._fail(p, exc.message)
            return _ack(f"failed: {exc.message}")
        except RunDeleted:
            # The document was deleted while its run went on; the upsert wrote nothing for it.
            await self._remove_litter(ref, generation=p.generation)
            return _ack("document deleted during ingestion")
        except Conflict:
            # Another consumer runs this very version: this copy came back because the visibility
            # timeout lapsed under it (or was delivered twice). Keep it queued, not acked: if that
            # consumer dies, this copy resumes the run; once the run is complete it acks at once.
            return Outcome("retry", "run in progress elsewhere", "run in progress elsewhere",
                           delay=IN_PROGRESS_RETRY_SECONDS)
        except Exception as exc:
            error = _error_text(exc)
            if last_attempt:
                await self._fail(p, f"{error} (gave up after {attempts} deliveries)")
            log.warning("run %s failed (delivery %d): %s", p.run_id, attempts, error)
            return Outcome("retry", "transient failure", error)
        return _ack(str(run.output.get("outcome") if isinstance(run.output, dict) else run.status))


    async def _remove_litter(self, ref: ObjectRef, *, generation: str | None = None) -> None:
        """The object and run artifacts of a deleted life of a document (only when its key says which)."""
        generation = generation or ref.generation
        if generation is None:
            return
        try:
            prefix = keys.run_artifacts_prefix(ref.entity_id, ref.document_id, ref.version, generation)
            doomed = [o.key for o in await self.bucket.list(prefix)]
            if ref.generation is not None:
                doomed.append(ref.key)
            await self.bucket.delete(*doomed)
        except Exception:
            log.warning("could not remove what deleted document %s left", ref.key, exc_info=True)

    async def _changed_behind_ready(self, ref: ObjectRef, doc: dict) -> str | None:
        """Why this event is refused, if the object behind the ready version is not what was ingested.

        A presigned URL of S3 or R2 stays usable until it expires, so its holder can PUT to the same key
        after the version is ready. The index keeps what was ingested (checked against the upload); the
        document says the object changed, and a new version is the way to change a document."""
        if not doc["object_etag"]:
            return None  # ingested before ETags were recorded: nothing to compare with
        info = await self.bucket.head(doc["object_key"])
        if info is None or info.etag == doc["object_etag"]:
            return None  # a repeated event of the same object
        warning = (f"the object of ready version {ref.version} was overwritten after ingestion ({info.size} bytes, "
                   f"ETag {info.etag}; {doc['object_etag']} was ingested); the index keeps the version as "
                   "ingested: upload a new version to change the document")
        await self.db.execute(SQL["note_changed_object"], {"entity_id": ref.entity_id,
                                                          "document_id": ref.document_id, "version": ref.version,
                                                          "generation": doc["generation"], "warning": warning})
        log.warning("document %s/%s: %s", ref.entity_id, ref.document_id, warning)
        return f"refused: object changed behind ready version {ref.version}"

    async def _fail(self, p: IngestParams, error: str) -> None:
        row = await self.db.fetchone(SQL["fail_document"], {"entity_id": p.entity_id, "document_id": p.document_id,
                                                           "version": p.version, "generation": p.generation,
                                                           "error": error})
        log.warning("document %s/%s v%d failed%s: %s", p.entity_id, p.document_id, p.version,
                    f" in step {row['step']}" if row and row["step"] else "", error)
        try:  # the run is over for good: its artifacts are litter now
            await ArtifactStore(self.bucket, keys.run_artifacts_prefix(p.entity_id, p.document_id, p.version,
                                                                      p.generation)).delete_all()
        except Exception:
            log.warning("could not delete the artifacts of %s", p.run_id, exc_info=True)


    async def handle_batch(self, batch) -> None:
        """Settle every message of a queue batch (the worker's ``queue`` handler)."""
        max_retries = self.settings.max_retries
        runs: dict[tuple[str, str, int], asyncio.Future] = {}
        plans: list[tuple[Message, list[tuple[str, str, int]]]] = []

        for message in batch.messages:
            try:
                refs = object_refs(message.body)
            except ValidationError as exc:
                log.warning("queue message %s ignored: %s", message.id, exc.message)
                message.ack()
                continue
            # Consumer semantics: delivery number max_retries + 1 is the last before the DLQ.
            last = message.attempts > max_retries
            ids = []
            for ref in refs:
                run_key = (ref.entity_id, ref.document_id, ref.version)
                ids.append(run_key)
                if run_key not in runs:  # the same object twice in a batch runs once
                    runs[run_key] = asyncio.ensure_future(self._limited(ref, message.attempts, last))
            plans.append((message, ids))

        outcomes = dict(zip(runs, await asyncio.gather(*runs.values(), return_exceptions=True)))
        for message, ids in plans:
            results = [outcomes[i] for i in ids]
            failures = [r for r in results if isinstance(r, BaseException) or r.action == "retry"]
            if not failures:
                message.ack()
                continue
            first = failures[0]
            if isinstance(first, BaseException):
                message.retry(error=_error_text(first))
            else:
                message.retry(delay_seconds=first.delay, error=first.error)


    async def _limited(self, ref: ObjectRef, attempts: int, last: bool) -> Outcome:
        key = (ref.entity_id, ref.document_id, ref.version)
        self._received[key] += 1
        try:
            async with self.limiter:
                with self.batcher.coming():  # its chunks are worth waiting for (EmbeddingBatcher)
                    outcome = await self.ingest_object(ref, attempts=attempts, last_attempt=last)
        finally:
            self._received[key] -= 1
            if not self._received[key]:
                del self._received[key]
        log.info("ingest %s v%d: %s %s", f"{ref.entity_id}/{ref.document_id}", ref.version, outcome.action,
                 outcome.reason)
        self.record_outcome(ref, outcome)
        return outcome


    async def resume_unfinished(self) -> int:
        """Resume runs a crashed ingest process left unfinished (called at start-up).

        Their messages come back only after the visibility timeout; this resumes them
        from their checkpoints now. A run another process holds is skipped (its lock).
        """
        rows = await self.db.fetch(SQL["unfinished_runs"])
        if not rows:
            return 0
        refs = [ObjectRef(key=r["object_key"], entity_id=r["entity_id"], document_id=r["document_id"],
                          version=r["version"]) for r in rows]
        outcomes = await asyncio.gather(*(self._limited(ref, 0, False) for ref in refs), return_exceptions=True)
        for ref, outcome in zip(refs, outcomes):
            if isinstance(outcome, BaseException):
                log.warning("resuming %s failed: %s", ref.key, outcome)
        return len(refs)


def _remember(table: OrderedDict, key, item, *, keep: int, per_key: int = PER_KEY_KEEP) -> None:
    """Append ``item`` under ``key``, keeping the ``keep`` most recently touched keys and the
    ``per_key`` latest items of each: a document updated again and again over a process's life
    must not grow its list without end (diagnostics want the recent history, not all of it)."""
    items = table.setdefault(key, [])
    items.append(item)
    del items[:-per_key]
    table.move_to_end(key)
    while len(table) > keep:
        table.popitem(last=False)
