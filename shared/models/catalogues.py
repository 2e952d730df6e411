"""The catalogues' vectors re-embedded with a cutover's target model: tools (their text and their
description), their examples (definition and learned), indices and collections (their text, fields
and parts).

A selection compares a request's vector with a catalogue's, so both must come from one model. The
cutover embeds every catalogue row of another model before its transaction (``prepare``), then
writes the vectors in the transaction that changes the serving model (``write``): a worker sees the
old model and the old catalogues, or the new model and the new ones. Each update is guarded by the
row's hash as read, and rows a registration changed in between are embedded again inside the
transaction; registrations cannot commit while it runs (catalog_cache.serving_guard).

Everything prepared is held in memory until the commit: a vector of 384 floats is 1.5 KiB, so
10,000 catalogue rows hold about 15 MB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from ..bindings.ai import Embedder
from ..errors import Conflict
from ..selection import field_vectors as fv
from ..selection.catalog_cache import bump
from ..selection.collections import descriptor_hash
from ..selection.definitions import ToolDef
from ..selection.definitions import content_hash as text_hash
from ..selection.indices import KIND as INDICES
from ..selection.indices import IndexDef, field_plan, part_text
from ..selection.indices import content_hash as index_hash
from ..selection.tools import KIND as TOOLS
from ..sqlfiles import load

SQL = load("models.sql")
PASSES = 3
Fetch = Callable[[str, dict], Awaitable[list[dict]]]


STATEMENTS = {"reembed_tool": "tools", "reembed_example": "examples", "reembed_index": "indices",
              "reembed_part": "parts"}


@dataclass
class Prepared:
    """Update parameters per statement of models.sql (STATEMENTS), each with the vectors it writes."""

    model_id: str
    updates: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(len(rows) for rows in self.updates.values())


async def prepare(fetch: Fetch, embedder: Embedder) -> Prepared:
    """Every catalogue row with a vector of another model than ``embedder``'s, embedded by it."""
    model_id = embedder.model_id
    where = {"model_id": model_id}
    out = Prepared(model_id)
    tools = await fetch(SQL["catalogue_tools"], where)
    defs = [ToolDef(t["name"], t["description"], t["parameters"], t["category"], tuple(t["tags"]),
                    tuple(t["requires"]), tuple(t["examples"])) for t in tools]
    texts = [d.embedded_text() for d in defs]
    described = [i for i, d in enumerate(defs) if d.description]
    vectors = await _embed(embedder, texts)
    description_vectors = dict(zip(described, await _embed(embedder, [defs[i].description for i in described]),
                                   strict=True))
    out.updates["reembed_tool"] = [
        {"entity_id": t["entity_id"], "name": t["name"], "content_hash": t["content_hash"], "model_id": model_id,
         "new_hash": text_hash(texts[i], model_id), "embedding": vectors[i],
         "description_embedding": description_vectors.get(i)} for i, t in enumerate(tools)]

    examples = await fetch(SQL["catalogue_examples"], where)
    vectors = await _embed(embedder, [e["text"] for e in examples])
    out.updates["reembed_example"] = [{"entity_id": e["entity_id"], "name": e["name"], "text_hash": e["text_hash"],
                                       "model_id": model_id, "embedding": v}
                                      for e, v in zip(examples, vectors, strict=True)]

    indices = await fetch(SQL["catalogue_indices"], where)
    defs_i = [IndexDef(r["name"], r["description"], tuple(r["fields"] or ()), r["kind"], r["profile"] or {})
              for r in indices]
    vectors = await _embed(embedder, [d.embedded_text() for d in defs_i])
    plans = [[f.text for f in field_plan(d)] for d in defs_i]
    field_matrix = await _embed(embedder, [text for plan in plans for text in plan])
    bounds = np.cumsum([0] + [len(plan) for plan in plans])
    out.updates["reembed_index"] = []
    for n, (r, d) in enumerate(zip(indices, defs_i, strict=True)):
        own = field_matrix[bounds[n]:bounds[n + 1]]
        collection = d.kind == "collection"
        out.updates["reembed_index"].append({
            "entity_id": r["entity_id"], "name": r["name"], "content_hash": r["content_hash"], "model_id": model_id,
            "new_hash": descriptor_hash(model_id, d.description, list(d.fields), d.profile or {}) if collection
            else index_hash(d, model_id),
            "embedding": vectors[n], "field_vectors": fv.pack(own) if len(own) else None,
            "field_hash": fv.texts_hash(model_id, plans[n]) if collection and plans[n] else None})

    parts = await fetch(SQL["catalogue_parts"], where)
    vectors = await _embed(embedder, [part_text(p["part"], list(p["fields"])) for p in parts])
    out.updates["reembed_part"] = [{**p, "model_id": model_id, "embedding": v}
                                   for p, v in zip(parts, vectors, strict=True)]
    return out


async def write(conn, embedder: Embedder, prepared: Prepared) -> dict[str, int]:
    """Inside the cutover's transaction, after the serving model's row is locked: the prepared
    vectors written, then the rows they did not cover (changed or added since) embedded and written
    too; the entities touched have their catalogue versions moved. Rows written per kind."""
    async def fetch(sql: str, params: dict) -> list[dict]:
        return await (await conn.execute(sql, params)).fetchall()

    written = dict.fromkeys(STATEMENTS.values(), 0)
    touched: dict[str, set[str]] = {TOOLS: set(), INDICES: set()}
    batch = prepared
    for _ in range(PASSES):
        for statement, rows in batch.updates.items():
            if not rows:
                continue
            async with conn.cursor() as cur:
                await cur.executemany(SQL[statement], rows)
                written[STATEMENTS[statement]] += max(cur.rowcount, 0)
            kind = TOOLS if statement in ("reembed_tool", "reembed_example") else INDICES
            touched[kind].update(row["entity_id"] for row in rows)
        # guarded updates that matched nothing (a registration changed the row since), and newer rows
        batch = await prepare(fetch, embedder)
        if not batch.rows:
            break
    else:  # nothing else writes catalogue vectors while the serving model's row is locked
        raise Conflict(f"catalogue rows still not of {prepared.model_id} after {PASSES} passes; nothing was changed")
    for kind, entities in touched.items():
        for entity_id in sorted(entities):
            await bump(conn, entity_id, kind)
    return written


async def _embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, int(embedder.dimension)), np.float32)
    return np.asarray(await embedder.embed(texts), np.float32)
