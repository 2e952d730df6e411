"""Router model versions in Postgres: per deployment (scope ``''``) with optional per-entity overrides.

Versions are immutable rows; ``router_active`` says which one serves each scope. Training and
feedback add versions; a rollback points a scope back at an earlier one (and says so in a
version row of its own, so the history reads in order).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from psycopg.types.json import Jsonb

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import NotFound, ValidationError
from .model import RouterModel

SQL = sqlfiles.load("routing.sql")
DEPLOYMENT = ""


@dataclass(frozen=True)
class Version:
    version: int
    model: RouterModel
    base: int | None


def _weights(value) -> dict:
    return value if isinstance(value, dict) else json.loads(value)


async def active(db: Database, scope: str = DEPLOYMENT) -> Version | None:
    row = await db.fetchone(SQL["active_model"], {"scope": scope})
    if row is None:
        return None
    return Version(row["version"], RouterModel.from_json(_weights(row["weights"])), row["base"])


async def add(db: Database, model: RouterModel, *, source: str, scope: str = DEPLOYMENT, parent: int | None = None,
              base: int | None = None, note: str = "", activate: bool = True) -> int:
    """Store ``model`` as a new version of ``scope`` (and serve it)."""
    async with db.transaction() as conn:
        row = await (await conn.execute(SQL["insert_model"], {
            "scope": scope, "weights": Jsonb(model.to_json()), "source": source, "parent": parent,
            "base": base, "note": note})).fetchone()
        if activate:
            await conn.execute(SQL["activate"], {"scope": scope, "version": row["version"]})
    return row["version"]


async def ensure_builtin(db: Database) -> int:
    """The deployment serves the package's built-in model until something else is stored; a newer
    built-in replaces an older one only while nothing trained or learned has taken over."""
    builtin = RouterModel.builtin()
    row = await db.fetchone(SQL["active_model"], {"scope": DEPLOYMENT})
    if row is not None:
        if row["source"] != "builtin" or _weights(row["weights"]) == builtin.to_json():
            return row["version"]
    version = await add(db, builtin, source="builtin", parent=row["version"] if row else None,
                        note=builtin.meta.get("trained_on", "") and f"trained on {builtin.meta['trained_on']}")
    # a built-in model is its own base: feedback moves are bounded around it
    return version


async def rollback(db: Database, *, scope: str = DEPLOYMENT, to: int | None = None) -> int:
    """Serve version ``to`` (default: the parent of the serving version) again; returns the new version."""
    current = await db.fetchone(SQL["active_model"], {"scope": scope})
    if current is None:
        raise NotFound(f"no router model serves scope {scope or 'deployment'!r}")
    target = to if to is not None else current["parent"]
    if target is None:
        raise ValidationError("the serving version has no earlier version to roll back to", field="to")
    row = await db.fetchone(SQL["model"], {"version": target})
    # an entity's first override descends from a deployment version: rolling back to it serves those weights
    if row is None or row["scope"] not in (scope, DEPLOYMENT):
        raise NotFound(f"version {target} is not a router model of scope {scope or 'deployment'!r}")
    return await add(db, RouterModel.from_json(_weights(row["weights"])), source="rollback", scope=scope,
                     parent=current["version"], base=row["base"] or row["version"], note=f"rollback to {target}")


async def versions(db: Database, scope: str = DEPLOYMENT, limit: int = 20) -> list[dict]:
    return await db.fetch(SQL["versions"], {"scope": scope, "limit": limit})


class ModelCache:
    """The serving models, read from Postgres at most every ``refresh`` seconds (a rollback or a
    training run in another process takes effect within that), at once after a local change."""

    def __init__(self, db: Database, refresh: float = 5.0) -> None:
        self.db = db
        self.refresh = refresh
        self._models: dict[str, Version] = {}
        self._loaded = -1e9
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._loaded = -1e9

    async def get(self, entity_ids: list[str]) -> Version | None:
        """The entity's override when the search spans one entity that has one, else the deployment's."""
        if time.monotonic() - self._loaded > self.refresh:
            async with self._lock:
                if time.monotonic() - self._loaded > self.refresh:
                    rows = await self.db.fetch(SQL["active_models"])
                    self._models = {r["scope"]: Version(r["version"], RouterModel.from_json(_weights(r["weights"])),
                                                        r["base"]) for r in rows}
                    self._loaded = time.monotonic()
        if len(entity_ids) == 1 and entity_ids[0] in self._models:
            return self._models[entity_ids[0]]
        return self._models.get(DEPLOYMENT)
