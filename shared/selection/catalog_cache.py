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
from ..errors import Conflict

SQL = sqlfiles.load("tools.sql")
MAX_ENTRIES = 128


def as_vector(value: Any) -> np.ndarray:
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def model_ids(rows: Sequence[dict]) -> frozenset[str]:
    """The models a catalogue's rows were embedded with (rows read without the column name none)."""
    return frozenset(r["model_id"] for r in rows if r.get("model_id"))


def check_model(registered: frozenset[str], model_id: str, kind: str) -> None:
    """A catalogue's vectors are comparable with a request's only when one model made both: after a
    model cutover (``edgeindex models cutover``) an entity's catalogue is registered again."""
    others = sorted(registered - {model_id})
    if others:
        raise Conflict(f"the {kind} were registered with {', '.join(others)}; the serving model is now "
                       f"{model_id}: register them again", field="model")


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
