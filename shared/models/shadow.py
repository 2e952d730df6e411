"""Shadow mode: before a cutover, searches also ask the model being migrated to, and both answers are logged.

With the search worker's ``MODEL_SHADOW`` naming a packaged model whose vectors a backfill stored
(``edgeindex models backfill``), a share ``MODEL_SHADOW_SAMPLE`` of the answers the worker computes
(cache hits are the answers of earlier searches) are compared after they are sent: the query is
embedded with the shadow model, that model's vectors of the same entities are searched exactly, and
one row of ``model_shadow_searches`` keeps both answers' chunk ids and their overlap. Nothing of it
is on the request path, and the served answer is the serving model's alone. ``edgeindex models
status`` sums the rows up per model; ``edgeindex eval --compare model:NAME`` scores the two on judged
queries.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from ..bindings.ai import Embedder
from ..bindings.database import Database
from ..sqlfiles import load

log = logging.getLogger(__name__)
SQL = load("models.sql")


class ShadowModel:
    def __init__(self, db: Database, embedder: Embedder, *, sample: float,
                 draw: Callable[[], float] = random.random) -> None:
        self.db, self.embedder, self.sample, self._draw = db, embedder, sample, draw

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    def wanted(self, serving_model: str) -> bool:
        """Whether this answer is compared: sampled, and only while another model serves."""
        return serving_model != self.model_id and self._draw() < self.sample

    async def compare(self, *, search_id: str, entity_ids: list[str], query: str, serving_model: str,
                      served: list[str], k: int) -> dict | None:
        """The shadow model's answer beside ``served`` (chunk ids, best first), logged; None when the
        shadow model has no vectors of these entities yet (nothing to compare)."""
        started = time.perf_counter()
        vector = await self.embedder.embed_query(query)
        rows = await self.db.fetch(SQL["shadow_search"], {"model_id": self.model_id, "entity_ids": entity_ids,
                                                          "embedding": vector, "k": k})
        if not rows:
            return None
        shadow = [r["chunk_id"] for r in rows]
        entry = {"search_id": search_id, "entity_ids": entity_ids, "query": query, "serving_model": serving_model,
                 "shadow_model": self.model_id, "k": k, "served": served, "shadow": shadow,
                 "overlap": len(set(served) & set(shadow)) / len(served) if served else 1.0,
                 "shadow_ms": round((time.perf_counter() - started) * 1000, 2)}
        await self.db.execute(SQL["log_shadow"], entry)
        return entry

    async def compare_quietly(self, **answer) -> None:
        """``compare`` off the request path: a failure is logged, never the search's."""
        try:
            await self.compare(**answer)
        except Exception:
            log.exception("shadow search with %s failed", self.model_id)


async def summary(db: Database) -> list[dict]:
    """Per shadow model (and the model it shadowed): searches compared, mean overlap, p50 cost."""
    return [{"shadow_model": r["shadow_model"], "serving_model": r["serving_model"], "searches": int(r["searches"]),
             "overlap": round(r["overlap"], 4), "shadow_ms_p50": round(r["shadow_ms_p50"], 2),
             "last_at": r["last_at"].isoformat()} for r in await db.fetch(SQL["shadow_summary"])]
