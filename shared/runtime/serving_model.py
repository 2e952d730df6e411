"""A running worker follows the database's serving model (``edgeindex models cutover`` changes it).

Every ``EDGEINDEX_MODEL_POLL_SECONDS`` (default 2) a worker with an embedding model reads which model
the database serves. When it changed, the worker loads that model beside the one it has, builds its
services again with ``startup`` on a copy of its env bound to it (and to a semantic cache keyed by
it), then binds both in its own env and swaps the services in: requests in flight finish on the old
services, the next ones run on the new. Nothing restarts and no request waits. Until the swap, a search embeds with the old model, and the vectors of the new one
score nothing for it (search.sql): its answers are full text alone for those seconds, never a mix.

Loading a model and preparing its encoders takes ~20 s (multilingual-e5-small), so a worker does it
ahead of the cutover: once a model's backfill is running or done, the worker loads it (the process
keeps one embedder per model: bindings/ai.local_embedder) and runs its module's ``prepare_model``
on it, and the switch itself then only builds the services.

Entities another model serves (``edgeindex models cutover --entity``, the ``entity_models`` table) are
read at each poll too: a worker whose module builds a search service (``search_service``) builds one
on each such model's bindings and hands the map to its services' search, which answers those
entities' searches with it (search/entity_models.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from ..bindings.ai import AI, local_embedder, serving_settings
from ..bindings.vectorize import PgVectorIndex
from ..errors import ConfigError
from ..search.entity_models import EntityModels
from ..sqlfiles import load

log = logging.getLogger(__name__)
SQL = load("models.sql")
VARIABLE = "EDGEINDEX_MODEL_POLL_SECONDS"
DEFAULT_POLL_SECONDS = 2.0


def poll_seconds(environ: dict[str, str] | None = None) -> float:
    raw = (os.environ if environ is None else environ).get(VARIABLE, "").strip()
    if not raw:
        return DEFAULT_POLL_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.05 <= value <= 3600:
        raise ConfigError(f"expected seconds between 0.05 and 3600, got {raw!r}", key=VARIABLE)
    return value


def _load(settings, prepare) -> None:
    embedder = local_embedder(settings.batch_size, settings.model)
    if prepare is not None:
        prepare(embedder)


class Services:
    """The worker's current services: what each request and batch is handed."""

    def __init__(self, current: Any) -> None:
        self.current = current


class ServingModelFollower:
    """Swaps a worker's services for ones built on the database's serving model when it changes."""

    def __init__(self, env, module, services: Services, db, *, every: float) -> None:
        self.env, self.module, self.services, self.db, self.every = env, module, services, db, every
        self.prepared: set[str] = set()   # models loaded and prepared ahead of a cutover
        self.peers: dict[str, Any] = {}    # model → the search service of the entities it serves
        self.unloadable: set[str] = set()  # models some entity is served by that this worker cannot load

    @property
    def ai(self) -> AI:
        return self.env.bindings[self.env.worker.ai.binding]

    @property
    def model_id(self) -> str:
        return self.ai.embedder.model_id

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=self.every)
                return
            except TimeoutError:
                pass
            try:
                await self.check()
            except Exception:  # a failed check or load is logged and tried again at the next poll
                log.exception("worker %s: following the serving model failed", self.env.worker_name)

    async def check(self) -> bool:
        """Switch if the database serves another model; whether it switched."""
        stored = await self.db.serving_model()
        if stored is None:
            return False
        if stored[0] == self.model_id:
            await self.prepare_next(stored)
            await self.follow_entities(stored)
            return False
        settings = serving_settings(self.ai.settings, stored)
        if settings is self.ai.settings:
            log.error("worker %s: the database serves %s, which this worker cannot load; its searches are "
                      "full text only until it is restarted with that model", self.env.worker_name, stored[0])
            return False
        await self.switch(settings, stored)
        await self.follow_entities(stored)
        return True

    async def follow_entities(self, stored: tuple[str, int]) -> None:
        """Serve each entity another model serves with that model's search service (built once per model)."""
        build = getattr(self.module, "search_service", None)
        search = getattr(self.services.current, "search", None)
        if build is None or search is None:
            return
        models = {r["entity_id"]: r["model_id"] for r in await self.db.fetch(SQL["entity_models"])
                  if r["model_id"] != stored[0]}
        wanted = set(models.values())
        for model in sorted(wanted - self.peers.keys() - self.unloadable):
            settings = serving_settings(self.ai.settings, (model, stored[1]))
            if settings is self.ai.settings:
                self.unloadable.add(model)
                log.error("worker %s: some entities are served by %s, which this worker cannot load; their "
                          "searches are full text only", self.env.worker_name, model)
                continue
            log.info("worker %s: some entities are served by %s; loading it", self.env.worker_name, model)
            ai = await asyncio.to_thread(AI, settings)
            peer = await build(self.env.rebound(self._bindings_of(ai, model, stored[1])))
            if peer.router is not None:
                await peer.router.start()
            self.peers[model] = peer
        for model in set(self.peers) - wanted:
            del self.peers[model]
        serving = EntityModels(models, {m: p for m, p in self.peers.items() if m in wanted})
        if serving != search.entity_models:
            search.serve_entities(serving)

    def _bindings_of(self, ai: AI, model: str, dimension: int) -> dict[str, Any]:
        """The worker's bindings that change with its model: the AI, and the vector indexes keyed by it."""
        changes: dict[str, Any] = {self.env.worker.ai.binding: ai}
        for index in self.env.worker.vectorize:
            changes[index.binding] = PgVectorIndex(self.db, index.index_name, model_id=model, dimension=dimension)
        return changes

    async def prepare_next(self, stored: tuple[str, int]) -> str | None:
        """Load and prepare the model a cutover is being readied for (its backfill running or done);
        the model prepared now, if any."""
        if self.ai.settings.provider != "local":
            return None
        rows = await self.db.fetch(SQL["models_to_prepare"], {"serving": stored[0], "dimension": stored[1]})
        for row in rows:
            if row["model_id"] in self.prepared:
                continue
            settings = serving_settings(self.ai.settings, (row["model_id"], stored[1]))
            if settings is self.ai.settings:
                continue   # not a packaged model: nothing to load
            self.prepared.add(row["model_id"])
            await asyncio.to_thread(_load, settings, getattr(self.module, "prepare_model", None))
            log.info("worker %s: %s is backfilled for a cutover: loaded and prepared it", self.env.worker_name,
                     row["model_id"])
            return row["model_id"]
        return None

    async def switch(self, settings, stored: tuple[str, int]) -> None:
        env = self.env
        old_services, old_model = self.services.current, self.model_id
        log.info("worker %s: the serving model is now %s; loading it", env.worker_name, stored[0])
        ai = await asyncio.to_thread(AI, settings)
        # the new services are built on a copy of the env bound to the new model: until they are swapped
        # in, the worker's own env (its /health, the next poll) names the model its services run, and a
        # build that fails leaves everything as it was, to be tried again at the next poll
        changes = self._bindings_of(ai, stored[0], stored[1])
        services = await self.module.startup(env.rebound(changes))
        for name, value in changes.items():
            env.bind(name, value)
        self.services.current = services
        for task in list(getattr(old_services, "background", ()) or ()):
            task.cancel()  # the old services' own loops (an ingest worker's refreshers) end with them
        log.info("worker %s: switched from %s to %s", env.worker_name, old_model, stored[0])
