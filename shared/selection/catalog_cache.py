"""Catalogues kept in the search worker's memory, re-read only when their version moved.

Every change to an entity's tools (or indices) bumps ``catalog_versions`` in the same
transaction, and every request reads the versions of the entities it asks for (one
indexed lookup), so a worker never serves a catalogue older than the last commit it
could have seen, and a request that follows a registration sees it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from .. import sqlfiles
from ..errors import Conflict, ModelSwitching

SQL = sqlfiles.load("tools.sql")
MAX_ENTRIES = 128


def as_vector(value: Any) -> np.ndarray:
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def model_ids(rows: Sequence[dict]) -> frozenset[str]:
    """The models a catalogue's rows were embedded with (rows read without the column name none)."""
    return frozenset(r["model_id"] for r in rows if r.get("model_id"))


async def check_model(db, registered: frozenset[str], model_id: str, kind: str) -> None:
    """A catalogue's vectors are comparable with a request's only when one model made both. A model
    cutover (``edgeindex models cutover``) re-embeds every catalogue in its commit; a worker that has
    not switched to the new model yet answers 503 (retry) for the seconds until it has."""
    others = sorted(registered - {model_id})
    if not others:
        return
    serving = await db.serving_model()
    if serving is not None and serving[0] in registered and serving[0] != model_id:
        raise ModelSwitching(f"the {kind} are embedded with {serving[0]}, the model this deployment now serves; "
                             f"this worker embeds with {model_id} until it switches, within seconds: retry",
                             field="model")
    raise Conflict(f"the {kind} were registered with {', '.join(others)}; the serving model is now "
                   f"{model_id}: register them again", field="model")


async def serving_guard(conn, model_id: str, what: str) -> None:
    """First in a transaction that writes vectors of ``model_id`` into a catalogue: the serving model's
    row is held (shared) to the commit, so a cutover (which re-embeds catalogues under the row's update
    lock) either waits for this write and re-embeds it, or commits first and this write is refused."""
    row = await (await conn.execute(SQL["serving_model_share"])).fetchone()
    if row is not None and row["model_id"] != model_id:
        raise ModelSwitching(f"the serving model is now {row['model_id']}; {what} were embedded with {model_id}: "
                             "send the request again once this worker has switched (within seconds)", field="model")


class CatalogCache:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = asyncio.Lock()

    async def versions(self, db, entity_ids: Sequence[str]) -> tuple[tuple[str, int], ...]:
        rows = await db.fetch(SQL["catalog_versions"], {"entity_ids": list(entity_ids), "kind": self.kind})
        found = {r["entity_id"]: int(r["version"]) for r in rows}
        return tuple((e, found.get(e, 0)) for e in sorted(entity_ids))

    async def get(self, db, entity_ids: Sequence[str], build: Callable[[Any, list[str]], Awaitable[Any]]) -> Any:
        key = await self.versions(db, entity_ids)
        if (hit := self._entries.get(key)) is not None:
            self._entries.move_to_end(key)
            return hit
        async with self._lock:   # one build per key, however many requests arrive together
            if (hit := self._entries.get(key)) is not None:
                return hit
            value = await build(db, [e for e, _ in key])
            self._entries[key] = value
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
            return value

    async def get_layered(self, db, entity_ids: Sequence[str], build: Callable[[Any, list[str]], Awaitable[Any]],
                          refresh: Callable[[Any, Any], Awaitable[Any]], layer_kind: str) -> tuple[Any, str]:
        """A catalogue whose learned layer (``layer_kind``, bumped by feedback) moves apart from its structure.

        Both versions are read in one statement. A moved structure builds the catalogue again; a moved
        layer alone calls ``refresh(db, previous)``, which must read the layer's current state (not a
        delta), so a layer version read before a concurrent feedback is only ever refreshed again.
        Returns the catalogue and ``"cached"``, ``"built"`` or ``"refreshed"``.
        """
        rows = await db.fetch(SQL["catalog_versions_of"], {"entity_ids": list(entity_ids),
                                                             "kinds": [self.kind, layer_kind]})
        found = {(r["entity_id"], r["kind"]): int(r["version"]) for r in rows}
        ordered = sorted(entity_ids)
        key = tuple((e, found.get((e, self.kind), 0)) for e in ordered)
        layer = tuple(found.get((e, layer_kind), 0) for e in ordered)
        if (hit := self._entries.get(key)) is not None and hit[0] == layer:
            self._entries.move_to_end(key)
            return hit[1], "cached"
        async with self._lock:
            if (hit := self._entries.get(key)) is not None and hit[0] == layer:
                return hit[1], "cached"
            if hit is None:
                value, how = await build(db, ordered), "built"
            else:
                value, how = await refresh(db, hit[1]), "refreshed"
            self._entries[key] = (layer, value)
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
            return value, how

    def clear(self) -> None:
        self._entries.clear()


async def bump(conn, entity_id: str, kind: str) -> None:
    await conn.execute(SQL["catalog_bump"], {"entity_id": entity_id, "kind": kind})
