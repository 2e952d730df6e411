"""Re-embedding stored chunks with another model, beside the serving model's vectors."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..bindings.ai import Embedder, local_model
from ..bindings.database import Database
from ..errors import BindingError, Conflict, ValidationError
from ..sqlfiles import load
from .shadow import summary as shadow_summary

log = logging.getLogger(__name__)
SQL = load("models.sql")

# Chunks read and embedded together: one model call, one write transaction.
BATCH = 64
# The share of wall time a backfill works; it rests for the rest, leaving the cores to searches.
DUTY = 0.5
_BEFORE_EVERY_ID = ("", "00000000-0000-0000-0000-000000000000")


@dataclass
class Progress:
    model_id: str
    embedded: int = 0        # chunks embedded by this call
    passes: int = 0          # walks over the chunks; the last one found nothing left
    seconds: float = 0.0     # working (embedding and writing), rests excluded
    stopped: bool = False    # ended by `should_stop` before the chunks were all embedded

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return {"model_id": self.model_id, "embedded": self.embedded, "passes": self.passes,
                "seconds": round(self.seconds, 2), "chunks_per_second": round(self.chunks_per_second, 1),
                "stopped": self.stopped}


def stored_model_id(name: str) -> str:
    """The model id vectors of the model named ``name`` are stored under."""
    try:
        return local_model(name).model_id
    except BindingError:
        return name  # a model no longer packaged may still have vectors to drop


async def serving_model(db: Database) -> tuple[str, int]:
    stored = await db.serving_model()
    if stored is None:
        raise Conflict("the database has no serving model yet: start a worker or run `edgeindex migrate` first")
    return stored


async def backfill(db: Database, embedder: Embedder, *, entity_ids: list[str] | None = None,
                   batch: int = BATCH, duty: float = DUTY,
                   should_stop: Callable[[], bool] = lambda: False) -> Progress:
    """Embed every chunk in scope that has no vector of ``embedder``'s model, and store the vectors.

    Walks the chunks in (entity, id) order until a walk finds none left, so chunks written while it
    runs are embedded too. ``should_stop`` is asked between batches; what was written stays written."""
    if not 1 <= batch <= 2048:
        raise ValidationError("batch must be between 1 and 2048", field="batch")
    if not 0 < duty <= 1:
        raise ValidationError("duty must be above 0 and at most 1", field="duty")
    serving, _ = await serving_model(db)
    model_id, dimension = embedder.model_id, int(embedder.dimension)
    if model_id == serving:
        raise Conflict(f"{model_id!r} is the serving model: its vectors are the chunks' own", field="model")
    row = await db.fetchone(SQL["start_backfill"], {"model_id": model_id, "dimension": dimension,
                                                    "entity_ids": entity_ids})
    if row is None:
        raise Conflict(f"vectors of {model_id!r} were stored with another dimension; drop them first "
                       "(`edgeindex models drop`)", field="model")
    progress = Progress(model_id)
    try:
        while not progress.stopped:
            progress.passes += 1
            found = await _walk(db, embedder, progress, entity_ids, batch, duty, should_stop)
            if not found:
                break
    finally:
        await db.execute(SQL["finish_backfill"], {"model_id": model_id,
                                                  "state": "stopped" if progress.stopped else "done"})
    log.info("backfill of %s: %d chunks in %.1f s working (%d passes)%s", model_id, progress.embedded,
             progress.seconds, progress.passes, ", stopped" if progress.stopped else "")
    return progress


async def _walk(db: Database, embedder: Embedder, progress: Progress, entity_ids: list[str] | None,
                batch: int, duty: float, should_stop: Callable[[], bool]) -> int:
    """One walk over the chunks in scope; returns how many it embedded."""
    after = _BEFORE_EVERY_ID
    found = 0
    while True:
        if should_stop():
            progress.stopped = True
            return found
        started = time.perf_counter()
        rows = await db.fetch(SQL["pending_chunks"], {"after_entity": after[0], "after_id": after[1],
                                                     "entity_ids": entity_ids, "model_id": progress.model_id,
                                                     "limit": batch})
        if not rows:
            return found
        embedded = await vector_rows(embedder, rows)
        async with db.transaction() as conn, conn.cursor() as cur:
            await cur.executemany(SQL["insert_vector"], embedded)
            worked = time.perf_counter() - started
            await conn.execute(SQL["record_progress"], {"model_id": progress.model_id, "embedded": len(rows),
                                                        "seconds": worked})
        after = (rows[-1]["entity_id"], str(rows[-1]["id"]))
        found += len(rows)
        progress.embedded += len(rows)
        progress.seconds += worked
        if duty < 1:
            await asyncio.sleep(worked * (1 - duty) / duty)


async def vector_rows(embedder: Embedder, chunks: list[dict]) -> list[dict]:
    """``insert_vector``'s parameters for ``chunks`` (rows of ``pending_chunks``), embedded by ``embedder``."""
    vectors = await embedder.embed([c["content"] for c in chunks])
    if vectors.shape != (len(chunks), embedder.dimension):
        raise Conflict(f"{embedder.model_id!r} returned vectors of shape {vectors.shape}, "
                       f"expected ({len(chunks)}, {embedder.dimension})")
    return [{"model_id": embedder.model_id, "dimension": int(embedder.dimension), "entity_id": c["entity_id"],
             "chunk_id": c["id"], "content_hash": c["content_hash"], "embedding": v}
            for c, v in zip(chunks, vectors, strict=True)]


async def status(db: Database) -> dict:
    """The serving model, each other model's vectors (how many of its scope's chunks have one), and
    the entities another model serves."""
    serving, dimension = await serving_model(db)
    models = []
    for row in await db.fetch(SQL["model_status"]):
        chunks, vectors = int(row["chunks"]), int(row["vectors"])
        models.append({
            "model_id": row["model_id"], "dimension": row["dimension"], "entity_ids": row["entity_ids"],
            "state": row["state"], "vectors": vectors, "chunks": chunks,
            "covered": round(vectors / chunks, 4) if chunks else 1.0,
            "chunks_per_second": round(row["embedded"] / row["seconds"], 1) if row["seconds"] else None,
            "started_at": row["started_at"].isoformat(), "updated_at": row["updated_at"].isoformat(),
            "finished_at": row["finished_at"].isoformat() if row["finished_at"] else None})
    entities = {r["entity_id"]: r["model_id"] for r in await db.fetch(SQL["entity_models"])}
    return {"serving": {"model_id": serving, "dimension": dimension}, "models": models, "entities": entities,
            "shadow": await shadow_summary(db)}


async def drop(db: Database, model_id: str) -> int:
    """Delete a model's vectors, its backfill record and its shadow searches; returns the vectors deleted."""
    serving, _ = await serving_model(db)
    if model_id == serving:
        raise Conflict(f"{model_id!r} is the serving model: its vectors are not dropped", field="model")
    async with db.transaction() as conn:
        deleted = (await conn.execute(SQL["drop_vectors"], {"model_id": model_id})).rowcount
        await conn.execute(SQL["drop_backfill"], {"model_id": model_id})
        await conn.execute(SQL["drop_shadow"], {"model_id": model_id})
    return deleted
