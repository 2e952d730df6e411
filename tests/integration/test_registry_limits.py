"""An entity's registry limits (tools, indices) hold under concurrent registrations: the real
Postgres of the shared stack, the registry functions called in this process with a small limit and
an embedder that holds both registrations until each has read the entity's registry."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from edgeindex.bindings.kv import DiskKV
from edgeindex.errors import ValidationError
from edgeindex.selection import collections, indices, tools

from ..helpers import new_tenant

LIMIT = 10
DIMENSION = 384


class MeetingEmbedder:
    """Each registration's first model call waits at a barrier until the other's has come too: both
    have then read the registry and passed any check made before the model ran."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, parties: int) -> None:
        self.barrier = asyncio.Barrier(parties)
        self.met: set[asyncio.Task] = set()

    async def embed(self, texts: list[str]) -> np.ndarray:
        task = asyncio.current_task()
        if task not in self.met:
            self.met.add(task)
            async with asyncio.timeout(60):
                await self.barrier.wait()
        rng = np.random.default_rng(len(texts))
        vectors = rng.standard_normal((len(texts), DIMENSION)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _tools(prefix: str, n: int) -> dict:
    return {"tools": [{"name": f"{prefix}_{i}"} for i in range(n)]}


def _indices(prefix: str, n: int) -> dict:
    return {"indices": [{"name": f"{prefix}_{i}", "description": f"records of kind {prefix} {i}",
                         "fields": ["id"]} for i in range(n)]}


async def _race(register, db, entity_id: str, bodies: list[dict]) -> list:
    embedder = MeetingEmbedder(len(bodies))
    return await asyncio.gather(*(register(db, embedder, entity_id, b) for b in bodies), return_exceptions=True)


async def test_two_concurrent_tool_registrations_never_overrun_the_limit(stack, upload_admin, db, monkeypatch):
    monkeypatch.setattr(tools, "MAX_TOOLS_PER_ENTITY", LIMIT)
    entity_id = new_tenant(stack, upload_admin, prefix="limit").entity_id
    await tools.register(db, MeetingEmbedder(1), entity_id, _tools("base", LIMIT - 4))
    outcomes = await _race(tools.register, db, entity_id, [_tools("a", 3), _tools("b", 3)])
    stored = (await db.fetchone("SELECT count(*) AS n FROM tools WHERE entity_id = %(e)s", {"e": entity_id}))["n"]
    assert stored <= LIMIT, outcomes
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], ValidationError), outcomes
    assert refused[0].field == "tools"
    assert stored == LIMIT - 4 + 3


async def test_two_concurrent_index_registrations_never_overrun_the_limit(stack, upload_admin, db, monkeypatch):
    monkeypatch.setattr(indices, "MAX_PER_ENTITY", LIMIT)
    entity_id = new_tenant(stack, upload_admin, prefix="limit").entity_id
    await indices.register(db, MeetingEmbedder(1), entity_id, _indices("base", LIMIT - 4))
    outcomes = await _race(indices.register, db, entity_id, [_indices("a", 3), _indices("b", 3)])
    stored = (await db.fetchone("SELECT count(*) AS n FROM index_descriptors WHERE entity_id = %(e)s",
                                {"e": entity_id}))["n"]
    assert stored <= LIMIT, outcomes
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], ValidationError), outcomes
    assert refused[0].field == "indices"


async def test_two_concurrent_collection_descriptions_never_overrun_the_limit(stack, upload_admin, db, monkeypatch,
                                                                              tmp_path):
    # a described collection is an index of the entity's: the two share the limit and its lock
    monkeypatch.setattr(indices, "MAX_PER_ENTITY", LIMIT)
    monkeypatch.setattr(collections, "MAX_PER_ENTITY", LIMIT, raising=False)
    entity_id = new_tenant(stack, upload_admin, prefix="limit").entity_id
    embedder = MeetingEmbedder(1)
    await indices.register(db, embedder, entity_id, _indices("base", LIMIT - 1))
    kv = DiskKV(tmp_path / "kv", namespace="limits")
    outcomes = await asyncio.gather(*(collections.set_description(db, embedder, kv, entity_id, name,
                                                                  f"notes about {name}")
                                      for name in ("first", "second")), return_exceptions=True)
    named = (await db.fetchone(
        "SELECT count(*) AS n FROM (SELECT name FROM index_descriptors WHERE entity_id = %(e)s "
        "UNION SELECT name FROM collections WHERE entity_id = %(e)s) AS named", {"e": entity_id}))["n"]
    assert named <= LIMIT, outcomes
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], ValidationError), outcomes
    assert refused[0].field == "name"
    # describing a collection the entity has already is no registration: it passes at the limit
    kept = next(o for o in outcomes if not isinstance(o, BaseException))
    again = await collections.set_description(db, embedder, kv, entity_id, kept["name"], "new notes")
    assert again["description"] == "new notes"


@pytest.mark.parametrize("existing", [0, LIMIT - 3])
async def test_a_registration_within_the_limit_still_passes(stack, upload_admin, db, monkeypatch, existing):
    monkeypatch.setattr(tools, "MAX_TOOLS_PER_ENTITY", LIMIT)
    entity_id = new_tenant(stack, upload_admin, prefix="limit").entity_id
    if existing:
        await tools.register(db, MeetingEmbedder(1), entity_id, _tools("base", existing))
    outcome = await tools.register(db, MeetingEmbedder(1), entity_id, _tools("more", 3))
    assert outcome["registered"] == 3
    # re-registering the same names adds nothing, so it passes at the limit
    again = await tools.register(db, MeetingEmbedder(1), entity_id, _tools("more", 3))
    assert again["unchanged"] == 3
