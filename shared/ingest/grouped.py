"""The upsert commits of concurrent ingestion runs, grouped: one transaction for many documents.

The runs of a queue batch share model calls (``embedding.EmbeddingBatcher``), so they reach
their ``upsert`` step together. Committed one by one, every document pays its own transaction:
a lock, one INSERT per document (each firing the term-statistics trigger, migration 0003, under
the entity's lock), its own cache-invalidation bracket and its own commit. ``GroupedWriter``
takes the writes that arrive while a commit is in flight (no timer: a lone document is not
delayed) and commits them together:

- the documents are locked in one statement, in one order (two processes never deadlock);
- every new chunk of the group goes in by one binary COPY into a session staging table and ONE
  ``INSERT ... SELECT`` into ``chunks``, so term statistics are updated once per group;
- the cache is invalidated once for the group (``cache.Invalidation``: barrier before, release
  after the commit), holding every chunk id any of them replaces;
- ``finish_document`` for all of them in one pipelined ``executemany``.

Durability stays per document. Each run still checkpoints its own ``upsert`` step after the
commit, and a rerun of a committed version writes the same rows again (deterministic chunk ids,
``ON CONFLICT``). If a grouped commit fails, nothing of it is kept and each document is committed
again alone: the one whose write fails gets the error (and its run retries or fails on its own),
the others commit, as with a poison document in a shared model call.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from .. import object_keys as keys
from .. import sqlfiles
from ..cache import Invalidation
from ..errors import IngestError, ModelMismatchError
from ..history import writes as history
from ..history.retention import Retention

log = logging.getLogger(__name__)
SQL = sqlfiles.load("ingest.sql")
GROUPED = sqlfiles.load("ingest_grouped.sql")

# COPY column types, in the order of copy_chunk_stage (binary COPY needs them spelled out)
# where a row's model id is (each vector is of the model its row names)
MODEL_COLUMN = 10
STAGE_TYPES = ["text", "uuid", "text", "int4", "int4", "int4", "int4", "text", "text", "int4", "text", "vector",
               "text", "text", "text", "text", "text", "bytea", "int4"]


@dataclass
class DocumentWrite:
    """What one run's ``upsert`` commits, prepared outside the transaction."""

    entity_id: str
    document_id: str
    version: int
    generation: str
    ids: list[str]                 # every chunk id of the new version, in position order
    embedded_ids: set[str]         # the ids among them that are new rows (their rows are in ``rows``)
    rows: list[tuple]              # new chunk rows, in copy_chunk_stage's column order
    moves: list[dict]              # reused chunks whose position changed (move_chunk parameters)
    finish: dict                   # finish_document parameters
    future: asyncio.Future | None = field(default=None, repr=False)

    @property
    def where(self) -> dict:
        return {"entity_id": self.entity_id, "document_id": self.document_id}


class GroupedWriter:
    """Commits concurrent ``DocumentWrite`` s in shared transactions of up to ``max_documents``."""

    def __init__(self, db, kv, *, retention: Retention, max_documents: int = 64) -> None:
        self.db = db
        self.kv = kv
        self.retention = retention  # of document history (shared/history/): recorded in the same commit
        self.max_documents = max_documents
        self._queue: list[DocumentWrite] = []
        self._worker: asyncio.Task | None = None
        self.commits = 0        # transactions committed (telemetry: GET /batcher)
        self.documents = 0
        self.isolated = 0       # grouped commits that failed and were redone one document at a time

    def stats(self) -> dict:
        return {"commits": self.commits, "documents": self.documents, "isolated": self.isolated,
                "mean_documents_per_commit": round(self.documents / self.commits, 1) if self.commits else None}

    async def commit(self, write: DocumentWrite) -> dict:
        """Commit one document's new version; returns how (outcome, replaced version, cache entries)."""
        write.future = asyncio.get_running_loop().create_future()
        self._queue.append(write)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await write.future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # runs woken by the same model call queue their writes in this turn
        while self._queue:
            taken, self._queue = self._queue[:self.max_documents], self._queue[self.max_documents:]
            await self._commit_group(taken)

    async def _commit_group(self, writes: list[DocumentWrite]) -> None:
        try:
            results = await self._commit_together(writes)
        except Exception as exc:
            if len(writes) > 1:
                self.isolated += 1
                log.warning("a grouped commit of %d documents failed (%s: %s); committing each alone",
                            len(writes), type(exc).__name__, exc)
                for write in writes:
                    await self._commit_group([write])
                return
            _settle(writes[0], exc=exc)
            return
        for write, result in zip(writes, results, strict=True):
            _settle(write, result=result)

    async def _commit_together(self, writes: list[DocumentWrite]) -> list[dict]:
        results: list[dict | None] = [None] * len(writes)
        async with Invalidation(self.kv) as invalidation:
            async with self.db.transaction() as conn:
                row = await (await conn.execute(GROUPED["serving_model_share"])).fetchone()
                serving = row["model_id"] if row else ""
                own = {r["entity_id"]: r["model_id"] for r in await (await conn.execute(
                    GROUPED["entity_models_of"], {"entity_ids": sorted({w.entity_id for w in writes})})).fetchall()}
                stale = [w for w in writes if any(r[MODEL_COLUMN] != own.get(w.entity_id, serving) for r in w.rows)]
                if stale:  # the upsert step embeds again with the entity's model (workflow.py) when retried
                    model = own.get(stale[0].entity_id, serving)
                    raise ModelMismatchError(f"the serving model of {stale[0].entity_id!r} is now {model!r}; vectors "
                                             f"of {stale[0].document_id!r} are of another")
                locked = {(r["entity_id"], r["document_id"]): r for r in await (await conn.execute(
                    GROUPED["lock_documents"], {"entity_ids": [w.entity_id for w in writes],
                                                "document_ids": [w.document_id for w in writes]})).fetchall()}
                live: list[DocumentWrite] = []
                previous: list[str] = []
                going: list[DocumentWrite] = []
                for i, w in enumerate(writes):
                    row = locked.get((w.entity_id, w.document_id))
                    if row is None or row["generation"] != w.generation:
                        results[i] = {"outcome": "deleted"}
                        continue
                    if row["version"] != w.version:
                        results[i] = {"outcome": "superseded", "current_version": row["version"]}
                        continue
                    replaced = {"replaced_version": None, "replaced_object": None}
                    if row["ready_version"] is not None:  # a live version: its chunks are replaced or reused
                        run_id = keys.run_id(w.entity_id, w.document_id, row["ready_version"], w.generation)
                        found = await (await conn.execute(SQL["run_object_key"], {"run_id": run_id})).fetchone()
                        replaced = {"replaced_version": row["ready_version"],
                                    "replaced_object": found["object_key"] if found else None}
                        stored = [r["id"] for r in await (await conn.execute(SQL["chunk_ids"], w.where)).fetchall()]
                        missing = set(w.ids) - set(stored) - w.embedded_ids
                        if missing:  # the stored chunks changed since the diff: a bug or manual edits
                            raise IngestError(f"{len(missing)} chunk(s) the diff reused are gone; upload the "
                                              "document again")
                        previous += stored
                        live.append(w)
                    results[i] = {"outcome": "ready", **replaced}
                    going.append(w)
                if going:
                    # Every cached result holding a chunk these documents replace may now be wrong, and every
                    # cached result of their entities lacks what they add: retire them, and keep new ones
                    # from being cached until the commit.
                    await invalidation.begin(list(dict.fromkeys(w.entity_id for w in going)), previous)
                    rows = [row for w in going for row in w.rows]
                    async with conn.cursor() as cur:
                        if rows:
                            await cur.execute(GROUPED["create_chunk_stage"])
                            async with cur.copy(GROUPED["copy_chunk_stage"]) as copy:
                                copy.set_types(STAGE_TYPES)
                                for row in rows:
                                    await copy.write_row(row)
                            await cur.execute(GROUPED["insert_staged_chunks"])
                        moves = [m for w in going for m in w.moves]
                        if moves:
                            await cur.executemany(SQL["move_chunk"], moves)
                        replacing = {id(w) for w in live}
                        versions = [history.NewVersion(w.entity_id, w.document_id, w.version, w.ids,
                                                       replaces=id(w) in replacing) for w in going]
                        await history.archive_dropped(cur, versions, self.retention)
                        for w in live:
                            await cur.execute(SQL["delete_other_chunks"], {**w.where, "keep": w.ids})
                        await history.record(cur, versions, self.retention)
                        await cur.executemany(SQL["finish_document"], [{**w.where, **w.finish} for w in going])
        self.commits += 1
        self.documents += len(writes)
        for result in results:
            if result is not None and result["outcome"] == "ready":
                result["cache_entries_invalidated"] = invalidation.dropped
        return results  # type: ignore[return-value]


def _settle(write: DocumentWrite, *, result: dict | None = None, exc: BaseException | None = None) -> None:
    if write.future is None or write.future.done():
        return
    if exc is not None:
        write.future.set_exception(exc)
    else:
        write.future.set_result(result)
