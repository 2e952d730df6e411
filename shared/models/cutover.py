"""Changing the serving embedding model: the backfilled vectors become the chunks' own, in one commit.

A cutover first embeds, at full speed, what the backfill has not (chunks written since it finished),
then in one transaction, with writes to chunks held back and searches reading on: embeds the few
chunks written meanwhile, keeps the serving vectors in ``chunk_vectors`` under their model, moves the
target model's vectors into ``chunks.embedding``, names the target in ``embedding_model`` and writes
the catalogues' vectors of the target (models/catalogues.py, embedded before the transaction). Every
search statement sees either the old vectors and the old model or the new ones and the new model.

Workers follow the database (runtime/serving_model.py): each loads the new model beside the old and
rebuilds its services, serving all the while. A search from a worker that has not switched yet finds
vectors of another model than its query's: they score nothing (search.sql, `scored`), so its answer
is full text alone for those seconds, never a mix; cache keys carry the model (search/cache_keys.py).
A rollback is a cutover back to the model the last one replaced: its vectors were kept.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..bindings.ai import Embedder
from ..bindings.database import Database
from ..errors import Conflict
from ..sqlfiles import load
from . import catalogues
from .backfill import BATCH, backfill, serving_model, vector_rows

log = logging.getLogger(__name__)
SQL = load("models.sql")


@dataclass
class Cutover:
    from_model: str
    to_model: str
    chunks: int            # chunks whose vector was swapped
    embedded_before: int   # embedded by the catch-up before the swap
    embedded_during: int   # embedded inside the swap's transaction (written since the catch-up)
    locked_seconds: float  # how long writes to chunks waited
    rollback: bool = False
    catalogues: dict[str, int] = field(default_factory=dict)   # catalogue rows re-embedded, per kind
    catalogue_seconds: float = 0.0   # embedding them, before the transaction

    def as_dict(self) -> dict:
        return {"from_model": self.from_model, "to_model": self.to_model, "chunks": self.chunks,
                "embedded_before": self.embedded_before, "embedded_during": self.embedded_during,
                "locked_seconds": round(self.locked_seconds, 3), "rollback": self.rollback,
                "catalogues": self.catalogues, "catalogue_seconds": round(self.catalogue_seconds, 3)}


async def cutover(db: Database, embedder: Embedder, *, batch: int = BATCH, rollback: bool = False) -> Cutover:
    """Make ``embedder``'s model the serving one. Its vectors of chunks the backfill did not reach
    are embedded first; the old model's vectors are kept for a rollback until dropped."""
    serving, dimension = await serving_model(db)
    target = embedder.model_id
    if target == serving:
        raise Conflict(f"{target!r} is already the serving model", field="model")
    if int(embedder.dimension) != dimension:
        raise Conflict(f"{target!r} has dimension {embedder.dimension}; the chunks' vectors have {dimension} "
                       "(a model of another dimension needs a new deployment)", field="model")
    caught_up = await backfill(db, embedder, batch=batch, duty=1.0)
    started = time.perf_counter()
    catalogue = await catalogues.prepare(db.fetch, embedder)
    prepared_in = time.perf_counter() - started
    started = time.perf_counter()
    async with db.transaction() as conn:
        row = await (await conn.execute(SQL["lock_serving_model"])).fetchone()
        if row is None or row["model_id"] != serving:
            raise Conflict("the serving model changed while this cutover ran; run it again", field="model")
        await conn.execute(SQL["lock_chunks"])
        during = await _embed_pending(conn, embedder, batch)
        await conn.execute(SQL["keep_serving_vectors"], {"serving": serving, "dimension": dimension})
        swapped = (await conn.execute(SQL["serve_vectors"], {"target": target})).rowcount
        counted = await (await conn.execute(SQL["chunk_count"])).fetchone()
        total = counted["n"] if counted else 0
        if swapped != total:  # the transaction is rolled back: nothing changed
            raise Conflict(f"{total - swapped} of {total} chunks have no vector of {target!r}; nothing was changed")
        await conn.execute(SQL["drop_vectors"], {"model_id": target})
        await conn.execute(SQL["drop_backfill"], {"model_id": target})
        await conn.execute(SQL["kept_backfill"], {"model_id": serving, "dimension": dimension})
        await conn.execute(SQL["set_serving_model"], {"target": target, "dimension": dimension})
        written = await catalogues.write(conn, embedder, catalogue)
        await conn.execute(SQL["record_cutover"], {"from_model": serving, "to_model": target, "dimension": dimension,
                                                   "chunks": swapped, "embedded": caught_up.embedded + during,
                                                   "rollback": rollback})
    result = Cutover(serving, target, swapped, caught_up.embedded, during, time.perf_counter() - started, rollback,
                     written, prepared_in)
    log.info("cutover %s -> %s: %d chunks (%d embedded before, %d during; writes held %.2f s)", serving, target,
             swapped, caught_up.embedded, during, result.locked_seconds)
    return result


async def rollback_model(db: Database) -> str:
    """The model a rollback returns to: the one the last cutover replaced."""
    last = await db.fetchone(SQL["last_cutover"])
    serving, _ = await serving_model(db)
    if last is None or last["to_model"] != serving:
        raise Conflict("no cutover to roll back: the serving model is the deployment's first", field="model")
    return last["from_model"]


async def history(db: Database) -> list[dict]:
    return [{**row, "at": row["at"].isoformat()} for row in await db.fetch(SQL["cutovers"])]


async def _embed_pending(conn, embedder: Embedder, batch: int) -> int:
    """Inside the cutover's transaction: the chunks with no current vector of the target, embedded."""
    done = 0
    after = ("", "00000000-0000-0000-0000-000000000000")
    while True:
        rows = await (await conn.execute(SQL["pending_chunks"], {
            "after_entity": after[0], "after_id": after[1], "entity_ids": None,
            "model_id": embedder.model_id, "limit": batch})).fetchall()
        if not rows:
            return done
        embedded = await vector_rows(embedder, rows)
        async with conn.cursor() as cur:
            await cur.executemany(SQL["insert_vector"], embedded)
        done += len(rows)
        after = (rows[-1]["entity_id"], str(rows[-1]["id"]))
