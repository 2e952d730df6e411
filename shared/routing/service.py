"""The router as the search pipeline uses it.

- ``resolve`` (before the cache keys): which strategy a request gets. A named fixed strategy
  sets alpha (text 0, vector 1, hybrid: the request's); none takes the deployment default
  (``ROUTER_DEFAULT``: hybrid, the fixed blend, or auto); in shadow mode (``ROUTER_SHADOW``)
  a request naming none is served the fixed blend while the router's choice is logged.
- ``decide`` (after the lexical statement and the embedding, before retrieval): features,
  then the serving model's alpha (continuous, or a bin's). Under a millisecond (``route_ms`` in the worker timings).
- ``record`` (off the request path): one telemetry row per search, pruned past the retention.
- ``feedback``: ``POST /feedback``, once per search and only from the key that ran it; bounded
  updates once enough evidence is in. A search of one entity steps that entity's override; the
  deployment's model steps only from the admin key's feedback (a tenant key's on a search of
  several entities is recorded and steps nothing).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from .. import language, sqlfiles
from ..bindings.database import Database
from ..errors import Conflict, NotFound, ValidationError
from ..tenancy import Principal
from ..validation import parse
from . import store
from .features import Evidence, features
from .model import Bounds, RouterModel, ranking_reward, strategy_of
from .telemetry_writer import TelemetryWriter, dumps

SQL = sqlfiles.load("routing.sql")
log = logging.getLogger(__name__)
TELEMETRY_GROUP_ROWS = 128
PRUNE_EVERY = 500        # telemetry rows between two prunes of expired ones


@dataclass(frozen=True)
class RouterSettings:
    default: str = "auto"            # the strategy of a request that names none: "auto" or "hybrid" (the fixed blend)
    shadow: bool = False             # decide and log, serve the fixed blend (requests naming no strategy)
    telemetry: bool = True
    telemetry_days: int = 30
    refresh_seconds: float = 5.0
    bounds: Bounds = field(default_factory=Bounds)


@dataclass
class Decision:
    requested: str                    # what the request named ("" for nothing)
    strategy: str                     # served: text | vector | hybrid | auto (until decided)
    alpha: float
    features: dict[str, float] | None = None
    model_version: int | None = None
    bin: str | None = None
    shadow: tuple[str, float, str] | None = None   # (strategy, alpha, bin) the router chose while the default served

    @property
    def routes(self) -> bool:
        return self.strategy == "auto"

    def copy(self) -> Decision:
        """A shallow copy, as ``copy.copy`` makes (every field, whatever fields are added later), without
        its reduce protocol: 1.0 against 2.3 µs, on every exact hit."""
        new = object.__new__(Decision)
        new.__dict__.update(self.__dict__)
        return new

    def describe(self) -> dict:
        out: dict[str, Any] = {"requested": self.requested or None, "strategy": self.strategy,
                               "alpha": self.alpha, "model_version": self.model_version}
        if self.bin is not None:
            out["bin"] = self.bin
        if self.features is not None:
            out["features"] = self.features
        if self.shadow is not None:
            out["shadow"] = {"strategy": self.shadow[0], "alpha": self.shadow[1], "bin": self.shadow[2]}
        return out


class Router:
    def __init__(self, db: Database, settings: RouterSettings, *, tokenizer: Any | None = None,
                 vocabulary: frozenset[str] | None = None, languages: frozenset[str] | None = None) -> None:
        self.db = db
        self.settings = settings
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self.languages = languages   # the embedding model's (bindings/ai.py model_languages); None: any
        self.models = store.ModelCache(db, settings.refresh_seconds)
        # Groups of at most TELEMETRY_GROUP_ROWS rows: at thousands of exact hits a second a large group
        # is a burst of Postgres CPU on the cores the hits are served from (200 jsonb rows: ~8-10 ms).
        # Stored as json (migration 0019) a row costs Postgres about a third of a jsonb row, so a group of
        # 128 is a burst about as long as 32 jsonb rows, at a quarter of the groups' fixed cost in the
        # worker (checkout, COPY round trips) and in Postgres (a commit).
        self.telemetry_rows = TelemetryWriter(db, SQL["copy_telemetry"], copy=True, max_rows=TELEMETRY_GROUP_ROWS)
        self._rows = itertools.count(1)

    async def start(self) -> None:
        await store.ensure_builtin(self.db)
        if self.languages is not None and "*" not in self.languages:
            # the language detector loads its model on first use (seconds): not on a search
            await asyncio.to_thread(language.detect, "warm up the language detector")

    # --- before the cache keys ------------------------------------------------------------------

    def resolve(self, request) -> tuple[Any, Decision]:
        """The request with its strategy and alpha settled (what the cache key sees), and the decision so far."""
        named = request.strategy
        if named is not None and named != "hybrid" and "alpha" in request.model_fields_set:
            raise ValidationError(f"alpha applies to strategy \"hybrid\" only (this request names {named!r})",
                                  field="alpha")
        strategy = named
        if strategy is None:
            # an explicit alpha without a strategy is the fixed blend it always was
            explicit_alpha = "alpha" in request.model_fields_set
            strategy = "hybrid" if explicit_alpha or self.settings.shadow else self.settings.default
        alpha = {"text": 0.0, "vector": 1.0}.get(strategy, request.alpha)
        decision = Decision(named or "", strategy, alpha)
        return request.model_copy(update={"strategy": strategy, "alpha": alpha}), decision

    def shadows(self, decision: Decision) -> bool:
        return self.settings.shadow and not decision.requested

    async def version(self, entity_ids: list[str]) -> store.Version | None:
        return await self.models.get(entity_ids)

    # --- after lexical + embedding ---------------------------------------------------------------

    def decide(self, decision: Decision, query: str, lexical, candidates: int,
               version: store.Version | None, embedding: Any | None = None) -> None:
        """Fill in ``decision`` (the served choice when routing, the shadow choice in shadow mode)."""
        evidence = Evidence.from_lexical(lexical.evidence if lexical else None, lexical.text if lexical else [],
                                         lexical.trigram if lexical else [], candidates,
                                         languages=lexical.probe_languages if lexical else (),
                                         vectors=lexical.probe_vectors if lexical else ())
        values = features(query, self.tokenizer, self.vocabulary, evidence, embedding=embedding,
                          languages=self.languages)
        model = version.model if version is not None else RouterModel.blank()
        name, alpha = model.choose(values)
        decision.features = values
        decision.model_version = version.version if version is not None else None
        if decision.routes:
            decision.strategy, decision.alpha, decision.bin = strategy_of(alpha), alpha, name
        else:
            decision.shadow = (strategy_of(alpha), alpha, name)

    # --- telemetry -------------------------------------------------------------------------------

    def record(self, search_id: str, *, key_id: str, entity_ids: list[str], scope_hash: str, query: str,
               decision: Decision | None, results: list[dict], cache: str, timings: dict) -> Awaitable[None] | None:
        """Queue the search's row; what to hand ``ctx.wait_until`` (done once the row is written),
        or None when the deployment keeps no telemetry."""
        if not self.settings.telemetry:
            return None
        try:  # a search never fails for its telemetry (this runs before its answer is sent)
            d = decision or Decision("", "hybrid", 0.0)
            answer = AnswerColumns.of(d.strategy, d.alpha, d.features, d.model_version, results, d.shadow)
        except Exception:
            log.exception("could not make the telemetry row of search %s", search_id)
            return None
        return self.record_answer(search_id, key_id=key_id, entity_ids=entity_ids, scope_hash=scope_hash, query=query,
                                  requested=d.requested, answer=answer, cache=cache, timings=timings)

    def cached_columns(self, answer: dict) -> AnswerColumns | None:
        """``answer_columns`` of a cached answer, or None (logged): a search never fails for its telemetry."""
        try:
            return answer_columns(answer)
        except Exception:
            log.exception("could not make the telemetry columns of a cached answer")
            return None

    def record_answer(self, search_id: str, *, key_id: str, entity_ids: list[str], scope_hash: str, query: str,
                      requested: str, answer: AnswerColumns, cache: str,
                      timings: dict) -> Awaitable[None] | None:
        """``record`` with the columns the answer fixes made already (``answer_columns``: a cached
        answer's, made once per in-memory copy and reused by every hit it serves)."""
        if not self.settings.telemetry:
            return None
        try:
            shadow = answer.shadow
            # columns in copy_telemetry's order; the JSON is encoded here, as each search ends, so the
            # group's COPY only formats text
            written = self.telemetry_rows.enqueue((
                search_id, scope_hash, entity_ids, query, answer.features, requested, answer.strategy,
                answer.alpha, shadow[0] if shadow else None, shadow[1] if shadow else None,
                answer.model_version, answer.results, cache, _json(timings), key_id))
        except Exception:
            log.exception("could not make the telemetry row of search %s", search_id)
            return None
        if next(self._rows) % PRUNE_EVERY == 0:
            return self._prune_after(written)
        return written

    async def _prune_after(self, written: asyncio.Future) -> None:
        await asyncio.shield(written)
        await self.db.execute(SQL["prune_telemetry"], {"days": self.settings.telemetry_days})

    # --- feedback --------------------------------------------------------------------------------

    async def _telemetry_row(self, search_id: str) -> dict | None:
        """The search's row. Rows are written in groups a few tens of milliseconds after the answer:
        an agent that reports at once may be ahead of them, in this process or another one."""
        await self.telemetry_rows.flush()
        row = await self.db.fetchone(SQL["telemetry"], {"search_id": search_id})
        if row is None:  # another process's group may still be in its window
            await asyncio.sleep(2 * self.telemetry_rows.window)
            row = await self.db.fetchone(SQL["telemetry"], {"search_id": search_id})
        return row

    async def feedback(self, principal: Principal, body: dict) -> dict:
        """Rewards of every bin for this search's results; a bounded update once enough evidence is in."""
        from .feedback_model import FeedbackRequest

        request = parse(FeedbackRequest, body)
        if not self.settings.telemetry:
            raise ValidationError("feedback needs search telemetry, which this deployment turned off "
                                  "(ROUTER_TELEMETRY)", field="search_id")
        row = await self._telemetry_row(request.search_id)
        if row is None:
            raise NotFound("no search with this search_id (unknown, or past the telemetry retention)",
                           field="search_id")
        # only the key that ran the search judges it (a 404 as for an unknown one: another key's
        # search does not show that it exists)
        if row["key_id"] != principal.key_id:
            raise NotFound("no search with this search_id (unknown, or past the telemetry retention)",
                           field="search_id")
        returned = {r["chunk_id"] for r in row["results"]}
        useful, not_useful = set(map(str, request.useful)), set(map(str, request.not_useful))
        if unknown := (useful | not_useful) - returned:
            raise ValidationError(f"{len(unknown)} chunk id(s) were not returned by this search "
                                  f"(first: {sorted(unknown)[0]})", field="useful")
        if useful & not_useful:
            raise ValidationError("a chunk cannot be both useful and not useful", field="not_useful")
        scope = row["entity_ids"][0] if len(row["entity_ids"]) == 1 else store.DEPLOYMENT
        version = await self.models.get(row["entity_ids"])
        model = version.model if version is not None else RouterModel.builtin()
        rewards = {name: round(ranking_reward(row["results"], useful, not_useful, alpha), 6)
                   for name, alpha in model.bins}
        # the deployment's model is everyone's: only the operator's feedback steps it
        steps = scope != store.DEPLOYMENT or principal.is_admin
        inserted = await self.db.fetchone(SQL["insert_feedback"], {
            "search_id": request.search_id, "scope": scope, "useful": sorted(useful),
            "not_useful": sorted(not_useful), "rewards": Jsonb(rewards), "steps_model": steps})
        if inserted is None:
            raise Conflict("this search has feedback already (each search is judged once)", field="search_id")
        applied = await self.apply_feedback(scope, entity_ids=row["entity_ids"]) if steps else None
        return {"search_id": str(request.search_id), "rewards": rewards, "scope": scope or None,
                "applied_in_version": applied}

    async def apply_feedback(self, scope: str, *, entity_ids: list[str]) -> int | None:
        """One bounded step from the pending feedback of ``scope``, once there is enough of it."""
        bounds = self.settings.bounds
        pending = await self.db.fetch(SQL["pending_feedback"], {"scope": scope})
        if len(pending) < bounds.min_evidence:
            return None
        current = await store.active(self.db, scope)
        if current is None:  # an entity's first move starts from the deployment's model
            current = await store.active(self.db, store.DEPLOYMENT)
        if current is None:
            return None
        base_version = current.base or current.version
        base_row = await self.db.fetchone(SQL["model"], {"version": base_version})
        base = RouterModel.from_json(store._weights(base_row["weights"])) if base_row else current.model
        names = [n for n, _ in current.model.bins]
        gradients = [current.model.expected_gradient(row["features"],
                                                     np.array([float(row["rewards"].get(n, 0.0)) for n in names]))
                     for row in pending]
        gradient = per_key_mean(gradients, [row["key_id"] for row in pending])
        moved = current.model.bounded_step(gradient, base, bounds)
        moved.meta = {**current.model.meta, "feedback_events": len(pending)}
        async with self.db.transaction() as conn:
            new = await (await conn.execute(SQL["insert_model"], {
                "scope": scope, "weights": Jsonb(moved.to_json()), "source": "feedback",
                "parent": current.version, "base": base_version,
                "note": f"{len(pending)} feedback events"})).fetchone()
            await conn.execute(SQL["activate"], {"scope": scope, "version": new["version"]})
            await conn.execute(SQL["mark_applied"], {"version": new["version"], "ids": [r["id"] for r in pending]})
        self.models.invalidate()
        return new["version"]


def per_key_mean(gradients: list[np.ndarray], key_ids: list) -> np.ndarray:
    """The mean over keys of each key's mean gradient: however many searches one key judges, its
    judgements weigh as much as any other key's, 1/K of a step among K keys."""
    by_key: dict = {}
    for gradient, key_id in zip(gradients, key_ids, strict=True):
        by_key.setdefault(key_id, []).append(gradient)
    return np.mean([np.mean(group, axis=0) for group in by_key.values()], axis=0)


@dataclass(frozen=True)
class AnswerColumns:
    """The columns of a telemetry row that its answer fixes: the decision it was made with and its
    results, the JSON encoded. A cached answer's are the same for every search it serves, so they
    are made once per in-memory copy (search/local_exact_cache.py) and not per hit (the results' JSON
    alone is ~12 µs of a hit)."""

    strategy: str
    alpha: float
    features: str | None      # JSON
    model_version: int | None
    results: str              # JSON of each result's chunk_id, document_id, entity_id, score, scores
    shadow: tuple[str, float, str] | None = None

    @classmethod
    def of(cls, strategy: str, alpha: float, features: dict | None, model_version: int | None,
           results: list[dict], shadow: tuple[str, float, str] | None = None) -> AnswerColumns:
        """The columns from a decision's values and the results: the one place their JSON is made, for a
        new answer (``Router.record``) and a cached one (``answer_columns``) alike."""
        return cls(strategy, alpha, _json(features) if features is not None else None, model_version,
                   results_json(results), shadow)


def answer_columns(answer: dict) -> AnswerColumns:
    """A cached answer's columns, from the decision it was made with (its ``routing``; a hit never
    recorded the shadow choice of the search that made the answer, and still does not)."""
    routing = answer.get("routing") or {}
    return AnswerColumns.of(routing.get("strategy", ""), routing.get("alpha", 0.0), routing.get("features"),
                            routing.get("model_version"), answer["results"])


def results_json(results: list[dict]) -> str:
    return _json([{"chunk_id": r["chunk_id"], "document_id": r["document_id"], "entity_id": r["entity_id"],
                   "score": r["score"], "scores": r["scores"]} for r in results])


def _json(value: Any) -> str:
    """A jsonb column's text in a COPY row."""
    return dumps(value).decode()


def new_search_id() -> str:
    """A random (version 4) UUID's text, as ``str(uuid.uuid4())`` gives it (the same 122 bits from
    ``os.urandom``) without building the UUID object: 5.8 → 2.6 µs, on every search."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def scope_hash(entity_ids: list[str]) -> str:
    return _scope_hash(tuple(entity_ids))


@functools.lru_cache(maxsize=1024)
def _scope_hash(entity_ids: tuple[str, ...]) -> str:   # per search; the entity sets are few
    return hashlib.sha256("\x1f".join(sorted(entity_ids)).encode()).hexdigest()[:16]


def since(mark: float) -> float:
    return round((time.perf_counter() - mark) * 1000, 3)
