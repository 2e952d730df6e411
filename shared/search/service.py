"""``POST /search`` as a pipeline of named stages over one context object.

    parse → route (resolve) → scope → cache → plan → embed → cache (semantic) → lexical → route
    (decide) → retrieve → rerank → shape → store → telemetry      (lexical runs beside the embedding,
    before the semantic lookup, when the cache is off or the router needs its evidence)

Each stage is a small method of :class:`SearchService` reading and writing the
:class:`SearchContext`; a new capability (routing, query enhancement, telemetry)
is a new stage or a change to one, and the plan it makes is part of the cache key.

Cache protocol (see ``edgeindex.cache``): the scope's entity sequences are read
*before* any lookup or database query. A cached result is served only if it was
computed at exactly those sequences (so a document that became ready since is
never hidden behind a cached answer), and a new result is stored only if no
sequence moved while it was computed. A semantic hit must also ask the same
question (see ``semantic_guard``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .. import cache, sqlfiles
from ..bindings.ai import Embedder
from ..bindings.database import Database
from ..bindings.kv import KV
from ..bindings.rerank import Reranker
from ..bindings.vectorize import UPSERT as SEMANTIC_UPSERT
from ..bindings.vectorize import PgVectorIndex
from ..errors import KVUnavailable, ValidationError
from ..json_codec import decode_json_object
from ..routing.features import PROBE
from ..routing.service import Decision, Router, new_search_id, scope_hash
from ..routing.telemetry_writer import TelemetryWriter
from ..selection import collections
from ..tenancy import Principal, resolve_entities, resolve_existing_entities
from . import defaults, engine
from .cache_keys import CacheKeys, _digest, cache_keys
from .enhance import QueryEnhancer
from .entity_models import EntityModels
from .kv_outage import KVOutage
from .local_exact_cache import Copy, LocalExactCache
from .local_semantic_cache import LocalSemanticCache
from .request import SearchRequest, parse_request
from .request_memo import Parsed, ParsedMemo, splice
from .semantic_guard import model_vocabulary, signature

SQL = sqlfiles.load("search.sql")
T = TypeVar("T")
PRUNE_EVERY = 200  # semantic-cache stores between two prunes of expired pointers
SEMANTIC_CANDIDATES = 3  # nearest past queries checked against the guard
MAX_KEYED_SCOPES = 8  # entity sets whose cache keys one remembered body keeps


@dataclass(frozen=True)
class SearchSettings:
    max_k: int
    max_query_chars: int
    semantic_threshold: float
    cache_ttl: float
    hnsw_ef_search: int = defaults.HNSW_EF_SEARCH


@dataclass
class SearchContext:
    """One search as it passes through the stages: the request, its scope, what was found, timings."""

    principal: Principal
    body: dict
    started: float = field(default_factory=time.perf_counter)
    request: SearchRequest | None = None
    entity_ids: list[str] = field(default_factory=list)
    keys: CacheKeys | None = None
    sequences: tuple[int, ...] = ()
    limit: int = 0
    embedding: np.ndarray | None = None
    model_id: str = ""                # the model of ``embedding``: the service's that answers
    vector: np.ndarray | None = None  # what retrieval searches with, when enhancement changed the query's
    enhancement: dict | None = None
    lexical: engine.LexicalResult | None = None
    rows: list[dict] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    cache_outcome: str = "none"
    collections: dict | None = None   # which collections were searched (request.collections given)
    timings: dict[str, float] = field(default_factory=dict)
    search_id: str = field(default_factory=new_search_id)
    decision: Decision | None = None     # the router's (shared/routing/): strategy and alpha served
    version: Any = None                   # the router model version that decides (auto, shadow)
    parsed: Parsed | None = None          # the remembered body (search_json): its keys per entity set
    encoded: bool = False                 # the caller takes a hit's JSON as bytes (search_json)
    hit_copy: Copy | None = None          # the local exact cache's copy that answered (search_json): its JSON, its row
    signature: str | None = None          # the query's for the semantic guard: the lookup's, then its pointer's

    def response(self, payload: dict) -> dict:
        return {**payload, **self.answer_fields(payload)}

    def answer_fields(self, payload: dict) -> dict:
        """What an answer adds to its payload (the payload alone is what the cache stores)."""
        return {"count": len(payload["results"]), "cache": self.cache_outcome,
                "took_ms": _since(self.started), "search_id": self.search_id}


class SearchService:
    """Everything a search needs, given once at start-up by the search worker (or a test, the MCP server)."""

    def __init__(self, *, db: Database, kv: KV, embedder: Embedder, semantic_cache: PgVectorIndex,
                 settings: SearchSettings, reranker: Reranker | None = None, router: Router | None = None,
                 enhancer: QueryEnhancer | None = None, history: Any = None, shadow: Any = None) -> None:
        self.db = db
        self.shadow = shadow    # another model searched after the answer (models/shadow.py); None: off
        # entities another model serves, and that model's service (entity_models.py): set by the worker
        self.entity_models = EntityModels()
        # what catalogues (collections) are embedded with: the deployment's model, also in the
        # service of a model that serves only some entities
        self.catalogue_embedder: Embedder = embedder
        self.history = history  # searches as_of a time (as_of.AsOfSearch); None: not offered
        self.kv = kv
        self.embedder = embedder
        self.semantic_cache = semantic_cache
        self.reranker = reranker
        self.settings = settings
        self.router = router
        self.enhancer = enhancer or QueryEnhancer(db=db, kv=kv, embedder=embedder)  # offline (PRF) only
        self.vocabulary: frozenset[str] | None = None  # the model's whole words (semantic_guard)
        # the model and graph queries are embedded with, part of every cache key (prepare): an answer
        # made before a model cutover is never served after it
        self.query_vectors = ""
        self._stores = itertools.count(1)
        self._tuned = engine.tuned_connections(self.settings.hnsw_ef_search)
        self.local_exact = LocalExactCache()
        self.kv_outage = KVOutage()  # the KV down: searches answer uncached (kv_outage.py)
        self.local_semantic = LocalSemanticCache()   # the pointers this process stored, searched first
        self.parsed = ParsedMemo()
        # Semantic-cache pointers go in groups, after the answer (as telemetry rows do): one
        # transaction for all stored within a window, not a checkout, statement and commit each.
        self.semantic_writes = TelemetryWriter(db, SEMANTIC_UPSERT)
        self.stores = cache.StoreWriter(kv)  # the exact cache's stores: one thread, in groups
        # exact key → its store still in flight (store stage): a repeat of the request waits for it
        self._storing: dict[str, asyncio.Future] = {}

    def prepare(self) -> None:
        """Single queries through ONNX Runtime (bindings/onnx_query.py): ~3 ms instead of ~8."""
        prepare_query_embedding(self.embedder)
        self.query_vectors = f"{self.embedder.model_id}:{getattr(self.embedder, 'query_vectors', '')}"
        self.vocabulary = model_vocabulary(self.embedder)
        if self.router is not None:
            self.router.vocabulary = self.vocabulary
            try:
                self.router.tokenizer = self.embedder.tokenizer()
            except Exception:  # a remote model: no tokenizer, so no fragmentation to measure
                self.router.tokenizer = None
            self.router.languages = getattr(self.embedder, "languages", None)

    async def search(self, principal: Principal, body: dict, *, background: Any) -> dict:
        """``background.wait_until(coro)`` keeps work alive after the answer (the worker's ``ctx``)."""
        return (await self.search_with_context(principal, body, background=background))[0]

    async def search_with_context(self, principal: Principal, body: dict, *,
                                  background: Any) -> tuple[dict, SearchContext]:
        """``search``'s answer and the context it was made in, which ``more`` continues."""
        ctx = SearchContext(principal, body)
        self.parse(ctx)
        if (other := self._served_by(principal, ctx.request)) is not None:
            return await other.search_with_context(principal, body, background=background)
        self.resolve(ctx)
        return await self._run(ctx, background), ctx

    def _served_by(self, principal: Principal, request: SearchRequest) -> SearchService | None:
        """The service of another model, when it serves every entity of the request (entity_models.py)."""
        if not self.entity_models.models:
            return None
        return self.entity_models.service_for(resolve_entities(principal, request.entity_ids))

    def serve_entities(self, entity_models: EntityModels) -> None:
        """Answer the searches of entities another model serves with that model's service."""
        for other in entity_models.services.values():
            other.catalogue_embedder = self.embedder
        self.entity_models = entity_models

    def can_continue(self, ctx: SearchContext) -> bool:
        """Whether ``more`` can continue this search: it ran its statements here (no cache answered,
        so its blend is the one served), on live documents, without a reranker."""
        return bool(ctx.rows) and ctx.lexical is not None and ctx.request.as_of is None and not ctx.request.rerank

    async def more(self, ctx: SearchContext, exclude_chunk_ids: list[str], limit: int) -> list[dict]:
        """Rows past a search's (``can_continue``): its request, scope, embedding and served blend
        in one hybrid statement, the given chunks left out; uncached. What costs a second search
        (the embedding, the routing, the scope) is not paid again. ``engine.shape`` makes a row a result."""
        request = ctx.request
        given = list(request.filters.exclude_chunk_ids or [])   # UUIDs; Filters.normalized makes them text
        filters = request.filters.model_copy(update={"exclude_chunk_ids": given + exclude_chunk_ids})
        request = request.model_copy(update={"filters": filters, "k": limit})
        vector = ctx.embedding if ctx.vector is None else ctx.vector
        _, rows = await engine.search(self.db, request, ctx.entity_ids, vector, model_id=ctx.model_id,
                                      tuned=self._tuned, limit=limit)
        return rows

    async def search_json(self, principal: Principal, raw: bytes, *, background: Any) -> dict | bytes:
        """``POST /search`` from the body's bytes: the answer as a dict, or a cache hit's answer as
        its JSON already encoded (the bytes ``encode_json`` would make of the dict).

        A body seen before (request_memo.ParsedMemo) skips its decode, parse, resolution and cache
        keys; everything a request must check each time still runs (the grant, the entity
        sequences, the entry's validity)."""
        parsed = self.parsed.get(raw)
        if parsed is None:
            ctx = SearchContext(principal, decode_json_object(raw))
            self.parse(ctx)
            self.resolve(ctx)
            parsed = self.parsed.put(raw, ctx.request, ctx.decision)
        else:
            ctx = SearchContext(principal, {})
            ctx.request, ctx.decision = parsed.request, parsed.fresh_decision()
        if (other := self._served_by(principal, ctx.request)) is not None:
            return await other.search_json(principal, raw, background=background)
        ctx.parsed, ctx.encoded = parsed, True
        return await self._run(ctx, background)

    async def _run(self, ctx: SearchContext, background: Any) -> dict | bytes:
        ctx.model_id = self.embedder.model_id
        if ctx.request.as_of is not None:
            return await self.search_as_of(ctx)
        await self.scope(ctx)
        if (hit := await self.cache_exact(ctx)) is not None:
            return self._answer(ctx, hit, ctx.answer_fields(hit), background)
        await self.choose_collections(ctx)
        self.plan(ctx)
        if ctx.request.cache:
            # A semantic hit answers before any search statement starts (a hit then costs the
            # embedding and one index lookup), "auto" included: see routed_keys.
            await self.embed(ctx)
            if (hit := await self.cache_semantic(ctx, background)) is not None:
                return self._answer(ctx, hit, {**ctx.answer_fields(hit), "timings": ctx.timings}, background)
            if self.in_one_statement(ctx):
                await self.retrieve_once(ctx)
                return await self.finish(ctx, background)
            ctx.lexical = await _timed(self._lexical(ctx), ctx.timings, "lexical_ms")
            self.route(ctx)
        else:
            # Without the cache nothing waits for the embedding: the lexical half runs meanwhile.
            lexical = asyncio.ensure_future(_timed(self._lexical(ctx), ctx.timings, "lexical_ms"))
            try:
                await self.embed(ctx)
                ctx.lexical = await lexical
            except BaseException:
                _abandon(background, lexical)
                raise
            self.route(ctx)
        await self.enhance(ctx)
        await self.retrieve(ctx)
        return await self.finish(ctx, background)

    async def search_as_of(self, ctx: SearchContext) -> dict:
        """The documents as they were at ``as_of`` (document history): its own statement, uncached."""
        if self.history is None:
            raise ValidationError("as_of needs document history, which this service was built without",
                                  field="as_of")
        self.history.check(ctx.request)
        ctx.entity_ids = await resolve_existing_entities(self.db, ctx.principal, ctx.request.entity_ids)
        if self.history.uses_vectors(ctx.request):
            await self.embed(ctx)
        mark = time.perf_counter()
        results = await self.history.search(ctx.request, ctx.entity_ids, ctx.embedding, self.embedder.model_id)
        ctx.timings["as_of_ms"] = _since(mark)
        payload = {"results": results[::-1] if ctx.request.order == "reverse" else results,
                   "entity_ids": ctx.entity_ids, "corrections": {}, "as_of": ctx.request.as_of.isoformat(),
                   "model_id": self.embedder.model_id,
                   "routing": {"requested": ctx.request.strategy, "strategy": ctx.request.strategy or "hybrid",
                               "alpha": self.history.blend(ctx.request)[1], "model_version": None}}
        return {**ctx.response(payload), "timings": ctx.timings}

    def _answer(self, ctx: SearchContext, hit: dict, fields: dict, background: Any) -> dict | bytes:
        """A cache hit's answer: the dict, or (search_json, with the payload's JSON at hand) its
        JSON spliced from the payload's, encoded once per cached copy (request_memo.splice)."""
        response = self.telemetry(ctx, {**hit, **fields}, background)
        encoded = ctx.hit_copy.encoded if ctx.hit_copy is not None else None
        if encoded is None:
            return response
        return splice(encoded, hit, fields)

    async def finish(self, ctx: SearchContext, background: Any) -> dict:
        await self.rerank(ctx)
        payload = self.shape(ctx)
        self.store(ctx, payload, background)
        if self.shadow is not None and self.shadow.wanted(self.embedder.model_id):
            background.wait_until(self.shadow.compare_quietly(
                search_id=ctx.search_id, entity_ids=ctx.entity_ids, query=ctx.request.query,
                serving_model=self.embedder.model_id, served=[r["chunk_id"] for r in ctx.results],
                k=ctx.request.k))
        return self.telemetry(ctx, {**ctx.response(payload), "timings": ctx.timings}, background)

    # --- stages ------------------------------------------------------------------------

    def parse(self, ctx: SearchContext) -> None:
        ctx.request = parse_request(ctx.body, max_k=self.settings.max_k,
                                    max_query_chars=self.settings.max_query_chars)
        if ctx.request.rerank and self.reranker is None:
            raise ValidationError("rerank is not configured on this deployment (set the RERANK_URL var)",
                                  field="rerank")
        self.enhancer.check(ctx.request)

    def resolve(self, ctx: SearchContext) -> None:
        """The strategy a request gets (shared/routing/service.py): fixed, or "auto" to decide later."""
        if self.router is None:
            ctx.decision = Decision(ctx.request.strategy or "", "hybrid", ctx.request.alpha)
            if ctx.request.strategy not in (None, "hybrid"):
                raise ValidationError("strategy needs the router, which this service was built without",
                                      field="strategy")
            return
        ctx.request, ctx.decision = self.router.resolve(ctx.request)

    async def scope(self, ctx: SearchContext) -> None:
        ctx.entity_ids = await resolve_existing_entities(self.db, ctx.principal, ctx.request.entity_ids)
        ctx.keys = self._keys(ctx)
        if self.router_decides(ctx):
            ctx.version = await self.router.version(ctx.entity_ids)
            if ctx.decision.routes:
                # "auto" answers depend on the model that decides: its version is part of the key
                ctx.keys = routed_keys(ctx.keys, ctx.version)
        # Before any lookup or database read: see the module docstring. Reads of the KV are plain
        # SQLite selects that never wait for a writer (bindings/kv.py), cheaper on the loop than
        # the hand-off to a thread.
        if not ctx.request.cache:
            return
        if not self.kv_outage.available():  # a failure a moment ago: no try until its pause is over
            self._bypass(ctx)
            return
        try:
            ctx.sequences = cache.read_sequences(self.kv, ctx.entity_ids)
        except KVUnavailable as exc:
            self._bypass(ctx, exc)

    def _bypass(self, ctx: SearchContext, exc: KVUnavailable | None = None) -> None:
        """The rest of this search without the caches: nothing served from them, nothing stored.
        ``exc``: the KV's failure that made it so (none while a pause after one runs)."""
        if exc is not None:
            self.kv_outage.failed(exc)
        self.kv_outage.bypassed += 1
        ctx.request = ctx.request.model_copy(update={"cache": False})
        ctx.cache_outcome = "bypassed"

    def _keys(self, ctx: SearchContext) -> CacheKeys:
        """The cache keys of the request for its entities (a remembered body's, when it has them)."""
        if ctx.parsed is None:
            return cache_keys(ctx.request, ctx.entity_ids, self.query_vectors)
        entities = tuple(ctx.entity_ids)
        keys = ctx.parsed.keys.get(entities)
        if keys is None:
            keys = cache_keys(ctx.request, ctx.entity_ids, self.query_vectors)
            if len(ctx.parsed.keys) < MAX_KEYED_SCOPES:
                ctx.parsed.keys[entities] = keys
        return keys

    async def cache_exact(self, ctx: SearchContext) -> dict | None:
        if not ctx.request.cache:
            return None
        storing = self._storing.get(ctx.keys.exact)
        if storing is not None and storing.get_loop() is asyncio.get_running_loop():
            # the same request's answer is being stored (store stage): a repeat sees it, as when
            # the store was awaited before answering (its failure is the first request's, logged)
            await asyncio.wait([storing])
        try:
            hit = self._cached(ctx, ctx.keys.exact)
        except KVUnavailable as exc:
            self._bypass(ctx, exc)
            return None
        if hit is not None:
            ctx.cache_outcome = "exact"
        return hit

    def _cached(self, ctx: SearchContext, key: str) -> dict | None:
        """The result stored under ``key`` if computed at the request's sequences: this process's
        copy first (local_exact_cache.py, valid at the same sequences only), else the KV's (then kept)."""
        if ctx.encoded:
            found = self.local_exact.get_copy(key, ctx.sequences)
            if found is not None:
                ctx.hit_copy = found
                return found.payload
        else:
            hit = self.local_exact.get(key, ctx.sequences)
            if hit is not None:
                return hit
        hit, expires = cache.load_entry(self.kv, key, ctx.sequences)  # a read: see scope()
        if hit is not None and expires is not None:
            self.local_exact.put(key, ctx.sequences, hit, expires)
        return hit

    async def choose_collections(self, ctx: SearchContext) -> None:
        """``collections: "auto"``: index selection over the entities' collections picks the scope.
        The query is embedded first (selection needs it; the embed stage then reuses it)."""
        wanted = ctx.request.collections
        if wanted is None:
            return
        if wanted != "auto":
            ctx.collections = {"mode": "list", "searched": wanted, "confident": None, "shortlist": None}
            return
        await self.embed(ctx)
        mark = time.perf_counter()
        query = ctx.embedding if self.catalogue_embedder is self.embedder else \
            await self.catalogue_embedder.embed_query(ctx.request.query)
        ctx.collections = await collections.choose(self.db, self.catalogue_embedder, ctx.entity_ids,
                                                   ctx.request.query, query)
        # the key was made from "auto" (scope stage); the SQL filters by what was chosen
        ctx.request = ctx.request.model_copy(update={"collections": ctx.collections["searched"]})
        ctx.timings["collections_ms"] = _since(mark)

    def plan(self, ctx: SearchContext) -> None:
        """How many rows to retrieve (more than k when a reranker follows)."""
        ctx.limit = max(ctx.request.k, defaults.RERANK_CANDIDATES) if ctx.request.rerank else ctx.request.k

    def _lexical(self, ctx: SearchContext) -> Awaitable[engine.LexicalResult]:
        # the router's probe (its best chunks' language and vector) only when the router decides
        return engine.lexical(self.db, ctx.request, ctx.entity_ids, tuned=self._tuned, limit=ctx.limit,
                              probe=PROBE if self.router_decides(ctx) else 0)

    async def embed(self, ctx: SearchContext) -> None:
        # Without the cache, the query is embedded (model, in this process) while Postgres runs
        # the half of the search that needs no embedding (scope and BM25): they overlap.
        if ctx.embedding is not None:   # embedded already (choose_collections)
            return
        mark = time.perf_counter()
        ctx.embedding = await self.embedder.embed_query(ctx.request.query)
        ctx.timings["embed_ms"] = _since(mark)

    async def cache_semantic(self, ctx: SearchContext, background: Any) -> dict | None:
        if not ctx.request.cache:
            return None
        mark = time.perf_counter()
        try:
            # Similar wording is not the same question: numbers, identifiers, quoted phrases and
            # rare words must match exactly ("invoice 4711" is not "invoice 4712").
            wanted = self._signature(ctx)
            # this process's own pointers first (local_semantic_cache.py): no statement when one answers
            try:
                return await self._semantic_hit(ctx, wanted, background)
            except KVUnavailable as exc:
                self._bypass(ctx, exc)
                return None
        finally:
            ctx.timings["semantic_lookup_ms"] = _since(mark)

    async def _semantic_hit(self, ctx: SearchContext, wanted: str, background: Any) -> dict | None:
        for key in self.local_semantic.nearest(ctx.keys.namespace, ctx.embedding, signature=wanted,
                                               min_score=self.settings.semantic_threshold,
                                               k=SEMANTIC_CANDIDATES):
            if (hit := self._pointed_at(ctx, key, background)) is not None:
                return hit
        matches = await self.semantic_cache.query(ctx.embedding, namespace=ctx.keys.namespace,
                                                  top_k=SEMANTIC_CANDIDATES,
                                                  min_score=self.settings.semantic_threshold)
        for match in matches:
            if match.metadata.get("signature") != wanted:
                continue
            if (hit := self._pointed_at(ctx, match.id, background)) is not None:
                return hit
        return None

    def _signature(self, ctx: SearchContext) -> str:
        if ctx.signature is None:
            ctx.signature = signature(ctx.request.query, self.vocabulary)
        return ctx.signature

    def _pointed_at(self, ctx: SearchContext, key: str, background: Any) -> dict | None:
        """The answer a semantic pointer names, if servable (the exact cache's rule); else the
        pointer is forgotten, here and in Postgres."""
        hit = self._cached(ctx, key)
        if hit is None:
            # Invalidated, expired or computed before a change: forget the pointer.
            self.local_semantic.forget(key)
            background.wait_until(self.semantic_cache.delete(key))
            return None
        ctx.cache_outcome = "semantic"
        return hit

    def route(self, ctx: SearchContext) -> None:
        """The router's choice from the query and the lexical evidence: served ("auto"), or logged
        beside the fixed blend (shadow mode)."""
        if not self.router_decides(ctx):
            return
        mark = time.perf_counter()
        routed = ctx.decision.routes
        self.router.decide(ctx.decision, ctx.request.query, ctx.lexical,
                           engine.candidate_count(ctx.limit, dedupe=ctx.request.dedupe), ctx.version,
                           embedding=ctx.embedding)
        if routed:
            # the keys stay those of "auto" at this model version (routed_keys): not the decision's
            ctx.request = ctx.request.model_copy(update={"alpha": ctx.decision.alpha})
        ctx.timings["route_ms"] = _since(mark, 3)

    async def enhance(self, ctx: SearchContext) -> None:
        """Query enhancement (shared/search/enhance/): PRF or synonym terms for a second lexical pass, a HyDE
        vector; each behind its gate. The semantic cache keeps the plain query's vector."""
        outcome = await self.enhancer.apply(ctx.request, ctx.entity_ids, ctx.lexical, ctx.embedding,
                                            limit=ctx.limit, tuned=self._tuned)
        if outcome is not None:
            ctx.lexical = outcome.lexical or ctx.lexical
            ctx.vector = outcome.embedding
            ctx.enhancement = outcome.report
            ctx.timings["enhance_ms"] = outcome.report["ms"]

    def router_decides(self, ctx: SearchContext) -> bool:
        """The router decides this search: it serves the choice ("auto") or logs it (shadow mode)."""
        return self.router is not None and (ctx.decision.routes or self.router.shadows(ctx.decision))

    def in_one_statement(self, ctx: SearchContext) -> bool:
        """Both halves in one statement (engine.search) when nothing has to look at the lexical
        half first: the blend is fixed (no router decision, no shadow decision to log) and no
        query enhancement wants a first pass."""
        return not self.router_decides(ctx) and not self.enhancer.wanted(ctx.request)

    async def retrieve_once(self, ctx: SearchContext) -> None:
        mark = time.perf_counter()
        ctx.lexical, ctx.rows = await engine.search(self.db, ctx.request, ctx.entity_ids, ctx.embedding,
                                                    model_id=self.embedder.model_id, tuned=self._tuned,
                                                    limit=ctx.limit,
                                                    include_text=True if ctx.request.rerank else None)
        ctx.timings["search_ms"] = _since(mark)

    async def retrieve(self, ctx: SearchContext) -> None:
        mark = time.perf_counter()
        vector = ctx.embedding if ctx.vector is None else ctx.vector
        ctx.rows = await engine.retrieve(self.db, ctx.request, ctx.entity_ids, vector,
                                         model_id=self.embedder.model_id, tuned=self._tuned,
                                         lexical_result=ctx.lexical, limit=ctx.limit,
                                         include_text=True if ctx.request.rerank else None)
        ctx.timings["hybrid_ms"] = _since(mark)

    async def rerank(self, ctx: SearchContext) -> None:
        request = ctx.request
        if not request.rerank:
            ctx.results = [engine.shape(r, request) for r in ctx.rows]
            return
        mark = time.perf_counter()
        results = [engine.shape(r, request, text=True) for r in ctx.rows]
        scores = await self.reranker.rerank(request.query, [r["text"] or "" for r in results])
        for result, score in zip(results, scores, strict=True):
            result["scores"]["fused"] = result["score"]
            result["scores"]["rerank"] = round(score, 6)
            result["score"] = round(score, 6)
        results.sort(key=lambda r: r["score"], reverse=True)
        results = results[:request.k]
        if not request.include.text:
            for r in results:
                r.pop("text", None)
        ctx.results = results
        ctx.timings["rerank_ms"] = _since(mark)

    def shape(self, ctx: SearchContext) -> dict:
        # corrections: query words the entities have never seen, and the vocabulary terms that stood in
        # order "reverse": best last (its own cache scope, so the stored payload is already reversed)
        results = ctx.results[::-1] if ctx.request.order == "reverse" else ctx.results
        payload = {"results": results, "entity_ids": ctx.entity_ids, "corrections": ctx.lexical.corrections,
                   "model_id": self.embedder.model_id, "routing": ctx.decision.describe()}
        if ctx.enhancement is not None:
            payload["enhancement"] = ctx.enhancement
        if ctx.collections is not None:
            payload["collections"] = ctx.collections
        return payload

    def telemetry(self, ctx: SearchContext, response: dict, background: Any) -> dict:
        """One row per search, written off the request path (unless the deployment opted out)."""
        if self.router is not None and self.router.settings.telemetry:
            timings = {"took_ms": response["took_ms"], **ctx.timings}
            if ctx.cache_outcome != "none" and response.get("routing"):
                # a cached answer: the decision it was made with (its routing) and its results are
                # the answer's, the same for every hit of one in-memory copy, which keeps them
                copy = ctx.hit_copy
                answer = copy.telemetry if copy is not None else None
                if answer is None:
                    answer = self.router.cached_columns(response)   # None (logged) if it cannot be made
                    if copy is not None:
                        copy.telemetry = answer
                written = None if answer is None else self.router.record_answer(
                    ctx.search_id, key_id=ctx.principal.key_id, entity_ids=ctx.entity_ids, scope_hash=scope_hash(ctx.entity_ids),
                    query=ctx.request.query, requested=ctx.decision.requested, answer=answer,
                    cache=ctx.cache_outcome, timings=timings)
            else:
                written = self.router.record(
                    ctx.search_id, key_id=ctx.principal.key_id, entity_ids=ctx.entity_ids, scope_hash=scope_hash(ctx.entity_ids),
                    query=ctx.request.query, decision=ctx.decision, results=response["results"],
                    cache=ctx.cache_outcome, timings=timings)
            if written is not None:
                background.wait_until(written)
        return response

    def store(self, ctx: SearchContext, payload: dict, background: Any) -> None:
        """The answer into the exact cache, and its semantic pointer, after the answer: a store is
        a SQLite write transaction on the store thread (cache.StoreWriter), which would otherwise add
        ~1 ms to the median answer and most of the slowest answers' time under load. A request that
        comes again meanwhile waits for it (cache_exact)."""
        if not ctx.request.cache:
            return
        key = ctx.keys.exact
        task = asyncio.ensure_future(self._store(ctx, payload, background))
        self._storing[key] = task
        task.add_done_callback(lambda done: self._storing.pop(key, None) if self._storing.get(key) is done else None)
        background.wait_until(task)

    async def _store(self, ctx: SearchContext, payload: dict, background: Any) -> None:
        ttl = self.settings.cache_ttl
        try:
            stored = await self.stores.store(cache.Entry(ctx.keys.exact, payload, _chunk_ids(ctx.results),
                                                         ctx.entity_ids, ctx.sequences, ttl))
        except KVUnavailable as exc:  # answered already; the next searches bypass the caches
            self.kv_outage.failed(exc)
            return
        if stored:  # the pointer goes in its own group's window: a repeat waits for the entry only
            background.wait_until(self._remember(ctx, ttl))

    async def _remember(self, ctx: SearchContext, ttl: float) -> None:
        """The semantic-cache pointer to the answer just stored, written with the other pointers of
        its group (awaited, so the worker's drain at shutdown waits for it; a failed group is
        logged). Never wrong however late it lands: it names the exact key, whose entry carries
        the entity sequences it was computed at and is checked on every hit (cache.load)."""
        wanted = self._signature(ctx)
        # here first: this process's next paraphrase of the query finds it without a statement
        self.local_semantic.remember(ctx.keys.namespace, ctx.keys.exact, ctx.embedding, wanted, time.time() + ttl)
        await self.semantic_writes.add(self.semantic_cache.upsert_params(
            ctx.keys.exact, ctx.embedding, namespace=ctx.keys.namespace,
            metadata={"query": ctx.request.query, "signature": wanted}))
        if next(self._stores) % PRUNE_EVERY == 0:
            await self.db.execute(SQL["semantic_prune"], {"index": self.semantic_cache.index_name, "ttl": ttl})


def prepare_query_embedding(embedder: Any) -> None:
    """Called at start-up, and by the evaluation so that Chroma's queries are embedded exactly as
    ours. A remote embedder has nothing to prepare."""
    prepare = getattr(embedder, "prepare_queries", None)
    if prepare is not None:
        prepare()


def _chunk_ids(results: list[dict]) -> list[str]:
    ids = []
    for r in results:
        ids.append(r["chunk_id"])
        ids.extend(str(n["chunk_id"]) for n in r.get("neighbours") or [])
    return ids


async def _timed(awaitable: Awaitable[T], timings: dict[str, float], name: str) -> T:
    mark = time.perf_counter()
    try:
        return await awaitable
    finally:
        timings[name] = _since(mark)


def _abandon(background: Any, task: asyncio.Future) -> None:
    """The request failed while ``task`` ran beside it: the request's own error is the one reported."""
    if not task.done():
        background.wait_until(task)  # finished (and any error of its own logged) off the request path
    elif not task.cancelled():
        task.exception()  # retrieved, so asyncio does not warn about it


def routed_keys(keys: CacheKeys, version: Any) -> CacheKeys:
    """The keys of an "auto" search: its scope says "auto" (not the strategy the router will pick)
    plus the version of the model that picks, in both the exact key and the semantic namespace.

    So the semantic lookup can run before the lexical statement whose evidence the decision needs.
    This never breaks a cache guarantee: a hit still needs the same entities, filters and
    parameters (the scope), current entity sequences and the same signature (semantic_guard), and
    an answer made by another model version is never served. The decision is a function of the
    query (its features and its lexical evidence), like the scores are: a semantic hit serves the
    answer "auto" gave a near-identical question, with the decision that answer was made with
    (its `routing`, which telemetry records), just as it serves that question's ranking."""
    number = version.version if version is not None else None
    return CacheKeys(exact=_digest({"exact": keys.exact, "router_version": number}),
                     namespace=_digest({"namespace": keys.namespace, "router_version": number}))


def _since(mark: float, digits: int = 2) -> float:
    return round((time.perf_counter() - mark) * 1000, digits)
