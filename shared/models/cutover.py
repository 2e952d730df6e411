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

A cutover of some entities (``--entity``) is the same swap limited to their chunks, and names their
model in ``entity_models`` instead of the deployment's; catalogues stay on the deployment's model.
Workers serve each entity with its model (search/entity_models.py); an entity's rollback returns it
to the deployment's model. A deployment-wide cutover moves every entity and keeps each chunk's vector
under the model that served it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ..bindings.ai import Embedder
from ..bindings.database import Database
from ..errors import Conflict, NotFound, ValidationError
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
    entity_ids: list[str] | None = None   # the entities moved; None: the deployment's model changed

    def as_dict(self) -> dict:
        return {"from_model": self.from_model, "to_model": self.to_model, "chunks": self.chunks,
                "embedded_before": self.embedded_before, "embedded_during": self.embedded_during,
                "locked_seconds": round(self.locked_seconds, 3), "rollback": self.rollback,
                "catalogues": self.catalogues, "catalogue_seconds": round(self.catalogue_seconds, 3),
                "entity_ids": self.entity_ids}


async def cutover(db: Database, embedder: Embedder, *, batch: int = BATCH, rollback: bool = False,
                 entity_ids: list[str] | None = None) -> Cutover:
    """Make ``embedder``'s model the serving one: the deployment's, or ``entity_ids``' alone. Its
    vectors of chunks the backfill did not reach are embedded first; the vectors it replaces are
    kept for a rollback until dropped."""
    deployment, dimension = await serving_model(db)
    target = embedder.model_id
    if int(embedder.dimension) != dimension:
        raise Conflict(f"{target!r} has dimension {embedder.dimension}; the chunks' vectors have {dimension} "
                       "(a model of another dimension needs a new deployment)", field="model")
    if entity_ids is None:
        if target == deployment:
            raise Conflict(f"{target!r} is already the serving model", field="model")
        before = (await backfill(db, embedder, batch=batch, duty=1.0)).embedded
        started = time.perf_counter()
        catalogue = await catalogues.prepare(db.fetch, embedder)
        prepared_in = time.perf_counter() - started
        replaced = deployment
    else:
        entity_ids = sorted(set(entity_ids))
        replaced = await _entities_models(db, entity_ids, target, deployment)
        async with db.transaction() as conn:   # the catch-up, without holding writes back
            before = await _embed_pending(conn, embedder, batch, entity_ids)
        catalogue, prepared_in = None, 0.0     # catalogues stay on the deployment's model
    scope = {"target": target, "entity_ids": entity_ids}
    started = time.perf_counter()
    written: dict[str, int] = {}
    async with db.transaction() as conn:
        row = await (await conn.execute(SQL["lock_serving_model"])).fetchone()
        if row is None or row["model_id"] != deployment:
            raise Conflict("the serving model changed while this cutover ran; run it again", field="model")
        await conn.execute(SQL["lock_chunks"])
        during = await _embed_pending(conn, embedder, batch, entity_ids)
        await conn.execute(SQL["keep_serving_vectors"], {**scope, "dimension": dimension})
        swapped = (await conn.execute(SQL["serve_vectors"], scope)).rowcount
        left = await (await conn.execute(SQL["unserved_chunks"], scope)).fetchone()
        if left and left["n"]:  # the transaction is rolled back: nothing changed
            raise Conflict(f"{left['n']} chunks have no vector of {target!r}; nothing was changed")
        if entity_ids is None:
            await conn.execute(SQL["drop_vectors"], {"model_id": target})
            await conn.execute(SQL["drop_backfill"], {"model_id": target})
            await conn.execute(SQL["kept_backfill"], {"model_id": deployment, "dimension": dimension})
            await conn.execute(SQL["set_serving_model"], {"target": target, "dimension": dimension})
            await conn.execute(SQL["unserve_entities"], {"entity_ids": None})   # every entity moved
            assert catalogue is not None
            written = await catalogues.write(conn, embedder, catalogue)
        else:
            await conn.execute(SQL["drop_entity_vectors"], {"model_id": target, "entity_ids": entity_ids})
            if target == deployment:
                await conn.execute(SQL["unserve_entities"], {"entity_ids": entity_ids})
            else:
                await conn.execute(SQL["serve_entities"], {**scope, "dimension": dimension})
        await conn.execute(SQL["record_cutover"], {"from_model": replaced, "to_model": target, "dimension": dimension,
                                                   "chunks": swapped, "embedded": before + during,
                                                   "rollback": rollback, "entity_ids": entity_ids})
    result = Cutover(replaced, target, swapped, before, during, time.perf_counter() - started, rollback,
                     written, prepared_in, entity_ids)
    log.info("cutover %s -> %s%s: %d chunks (%d embedded before, %d during; writes held %.2f s)", replaced, target,
             f" of {', '.join(entity_ids)}" if entity_ids else "", swapped, before, during, result.locked_seconds)
    return result


async def entities_models(db: Database, entity_ids: list[str]) -> dict[str, str | None]:
    """Each entity's own model (None: the deployment's): a 400 for no entity, a 404 naming an unknown one."""
    if not entity_ids:
        raise ValidationError("name at least one entity", field="entity_ids")
    rows = {r["id"]: r["model_id"] for r in await db.fetch(SQL["entities_models"], {"entity_ids": entity_ids})}
    missing = [e for e in entity_ids if e not in rows]
    if missing:
        raise NotFound(f"unknown entity {', '.join(map(repr, missing))}", field="entity_ids")
    return rows


async def _entities_models(db: Database, entity_ids: list[str], target: str, deployment: str) -> str:
    """The model(s) serving ``entity_ids`` now, joined (``entities_models``' errors), or a 409 when
    ``target`` serves every one of them already."""
    serving = {e: model or deployment for e, model in (await entities_models(db, entity_ids)).items()}
    if set(serving.values()) == {target}:
        raise Conflict(f"{target!r} serves {', '.join(entity_ids)} already", field="model")
    return ", ".join(sorted(set(serving.values())))


async def rollback_model(db: Database, entity_ids: list[str] | None = None) -> str:
    """The model a rollback returns to: the one the last deployment-wide cutover replaced, or for
    entities, the deployment's model (an entity's rollback ends its exception)."""
    serving, _ = await serving_model(db)
    if entity_ids is not None:
        return serving
    last = await db.fetchone(SQL["last_cutover"])
    if last is None or last["to_model"] != serving:
        raise Conflict("no cutover to roll back: the serving model is the deployment's first", field="model")
    return last["from_model"]


async def history(db: Database) -> list[dict]:
    return [{**row, "at": row["at"].isoformat()} for row in await db.fetch(SQL["cutovers"])]


async def _embed_pending(conn, embedder: Embedder, batch: int, entity_ids: list[str] | None) -> int:
    """The chunks in scope with no current vector of the target, embedded (on ``conn``'s transaction)."""
    done = 0
    after = ("", "00000000-0000-0000-0000-000000000000")
    while True:
        rows = await (await conn.execute(SQL["pending_chunks"], {
            "after_entity": after[0], "after_id": after[1], "entity_ids": entity_ids,
            "model_id": embedder.model_id, "limit": batch})).fetchall()
        if not rows:
            return done
        embedded = await vector_rows(embedder, rows)
        async with conn.cursor() as cur:
            await cur.executemany(SQL["insert_vector"], embedded)
        done += len(rows)
        after = (rows[-1]["entity_id"], str(rows[-1]["id"]))
