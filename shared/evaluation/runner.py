"""One evaluation run: ingest a BEIR corpus through the real workers, query every
judged query through ``POST /search`` in each mode, run the baselines on the same
corpus (and, for Chroma, the same vectors), and score everything the same way."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelMismatchError, ValidationError
from . import metrics, routing_summary
from .beir import Dataset
from .edgeindex_client import EdgeIndexClient
from .modes import MODE_STRATEGY, MODEL_BASELINE, MODES, split_mode
from .stack import Endpoints


def mode_params(mode: str, options: Options) -> dict:
    return {"strategy": MODE_STRATEGY[mode], "alpha": options.alpha if mode == "hybrid" else None,
            "fusion": options.fusion}
# A p99 over a few dozen samples is the slowest sample but one: time enough passes for this many
# samples per system (at least 3 passes) unless --repeat says otherwise.
MIN_LATENCY_SAMPLES = 200
MIN_PASSES = 3

TIMING = {
    "edgeindex": "client wall time of one POST /search over a keep-alive HTTP connection "
                 "(the worker embeds the query while Postgres runs the lexical statement, then runs the "
                 "hybrid one: filters, ranks, dedupes; cache: false)",
    "chroma": "wall time of embedding the query (the search worker's own path: the ONNX Runtime export of "
              "the same model, one thread, in-process) plus collection.query, with more chunks fetched until "
              "k distinct documents",
    "bm25": "wall time of tokenizing + stemming the query plus BM25.retrieve (one thread)",
    "model": "wall time of embedding the query with the other model (its ONNX Runtime export, in-process) plus "
             "an exact cosine over every chunk vector in numpy",
    "model+bm25": "the model's dense search and BM25, each to 100 documents, one after the other, plus the fusion",
}

SearchFn = Callable[[str], Awaitable[tuple[list[str], float]]]


@dataclass
class Options:
    k: int = 10
    modes: tuple[str, ...] = MODES
    alpha: float | None = None
    fusion: str | None = None
    baselines: tuple[str, ...] = ("bm25",)
    repeat: int | None = None     # timed passes; None: enough for MIN_LATENCY_SAMPLES per system
    sweep: tuple[str, list[Any]] | None = None
    concurrency: int = 8
    window: int = 64
    entity: str | None = None     # an entity that already holds the corpus: no upload
    ingest_timeout: float = 3600.0


@dataclass
class SystemRun:
    """One system (or one mode of ours): how to query it, then what it ranked and how long it took."""

    key: str
    system: str
    mode: str
    params: dict
    documents: int
    search: SearchFn | None = None
    extra: dict = field(default_factory=dict)
    server_timings: list[dict] | None = None     # what our worker reports per request
    run: dict[str, list[str]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    enhancements: dict[str, dict] | None = None   # query text -> what query enhancement did
    decisions: dict[str, dict] | None = None      # query text -> what the router served (auto)

    def summary(self, qrels, k: int, queries: dict[str, str] | None = None) -> dict:
        scores = metrics.per_query(qrels, self.run, k)
        extra = dict(self.extra)
        if self.enhancements and queries:
            extra["enhancement"] = enhancement_summary(self.enhancements, queries)
        if self.server_timings is not None:
            extra["server_latency_ms"] = server_latency(self.server_timings)
        if self.decisions:
            extra["routing"] = routing_summary.served(self.decisions)
        return {"system": self.system, "mode": self.mode, "params": self.params,
                "metrics": metrics.mean(scores, k),
                "latency_ms": metrics.latency_summary(self.latencies_ms),
                "latency_samples_ms": [round(value, 3) for value in self.latencies_ms],
                "documents": self.documents, "queries": len(scores), "timing": TIMING[self.system], **extra,
                "per_query": {qid: {name: round(value, 6) for name, value in s.items()} for qid, s in scores.items()}}


def enhancement_summary(reports: dict[str, dict], queries: dict[str, str]) -> dict:
    """How often each enhancement was applied or skipped (and why), and per query what was done and
    the first pass's evidence (what the gates in shared/search/enhance/gates.py are chosen from)."""
    from ..search.request import normalize_query

    by_text = {normalize_query(text): qid for qid, text in queries.items()}
    applied: dict[str, int] = {}
    skipped: dict[str, int] = {}
    per_query = {}
    for text, report in reports.items():
        for name in report.get("applied", []):
            applied[name] = applied.get(name, 0) + 1
        for name, reason in report.get("skipped", {}).items():
            key = f"{name}: {reason.split(' (')[0]}"
            skipped[key] = skipped.get(key, 0) + 1
        qid = by_text.get(normalize_query(text))
        if qid is not None:
            per_query[qid] = {"applied": report.get("applied", []), **report.get("evidence", {})}
    return {"applied": applied, "skipped": skipped, "per_query": per_query}


def search_body(query: str, entity_id: str, k: int, params: dict) -> dict:
    body = {"query": query, "k": k, "entity_ids": [entity_id], "dedupe": True, "cache": False,
            "include": {"text": False}}
    body.update({name: value for name, value in params.items() if value is not None})
    return body


async def measure(systems: list[SystemRun], queries: dict[str, str], repeat: int) -> None:
    """Every query ``repeat`` times on every system, one request at a time, *interleaved*.

    For each query each system answers in turn (the order rotates from query to
    query), so background load on the machine falls on every system alike instead
    of on whichever happened to run while something else was busy. One untimed
    warm-up query per system first. Rankings come from the first pass (the systems
    are deterministic); every pass adds latency samples.
    """
    first = next(iter(queries.values()))
    for system in systems:
        await system.search(first)
        if system.server_timings is not None:
            system.server_timings.clear()
    for number in range(repeat):
        for index, (qid, text) in enumerate(queries.items()):
            shift = index % len(systems)
            for system in systems[shift:] + systems[:shift]:
                ranked, elapsed_ms = await system.search(text)
                if number == 0:
                    system.run[qid] = ranked
                system.latencies_ms.append(elapsed_ms)


def server_latency(timings: list[dict]) -> dict[str, dict]:
    """Percentiles of each duration the search worker reports (took_ms, embed_ms, lexical_ms, hybrid_ms...)."""
    names = dict.fromkeys(name for t in timings for name, value in t.items() if isinstance(value, int | float))
    return {name: metrics.latency_summary([t[name] for t in timings if isinstance(t.get(name), int | float)])
            for name in names}


def entity_name(dataset: Dataset) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", dataset.name).strip("-")[:60] or "dataset"
    return f"eval-{slug}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d%H%M%S%f')}"


def timed_passes(queries: int) -> int:
    """Passes over the queries that give every system at least MIN_LATENCY_SAMPLES latency samples."""
    return max(MIN_PASSES, -(-MIN_LATENCY_SAMPLES // max(queries, 1)))


async def evaluate(dataset: Dataset, endpoints: Endpoints, options: Options,
                   progress: Callable[[str], None] = print) -> dict:
    """The whole run; returns the results document (see report.py for its layout)."""
    queries = dataset.judged_queries
    passes = options.repeat or timed_passes(len(queries))
    runs: list[SystemRun] = []
    sweep_points: list[dict] = []
    load_before = os.getloadavg()

    async with loaded_entity(dataset, endpoints, options, progress) as (client, entity_id, ingest, settled):
        for mode in dict.fromkeys([*options.modes, "default"]):
            base, enhance = split_mode(mode)
            params = {**mode_params(base, options), "enhance": enhance}
            server: list[dict] = []
            reports: dict[str, dict] = {}
            decisions: dict[str, dict] | None = {} if base == "auto" else None

            async def search(text: str, params=params, server=server, reports=reports,
                             decisions=decisions) -> tuple[list[str], float]:
                return await client.search(search_body(text, entity_id, options.k, params), server, reports,
                                           decisions)

            runs.append(SystemRun(f"edgeindex-{mode}", "edgeindex", mode,
                                  {k: v for k, v in params.items() if v is not None}, ingest.ready, search,
                                  server_timings=server, enhancements=reports, decisions=decisions))
        closers: list[Callable[[], None]] = []
        try:
            if "chroma" in options.baselines:
                chroma, close = await _chroma(endpoints, entity_id, options, progress)
                runs.append(chroma)
                closers.append(close)
            if "bm25" in options.baselines:
                runs.append(_bm25(dataset, options, progress))
            for name in options.baselines:
                if name.startswith(MODEL_BASELINE):
                    runs.extend(await _model(name[len(MODEL_BASELINE):], endpoints, entity_id, dataset, options,
                                             progress))
            progress(f"timing {', '.join(r.key for r in runs)}: {len(queries)} queries x {passes}, "
                     "interleaved")
            await measure(runs, queries, passes)
        finally:
            for close in closers:
                close()

        if options.sweep:
            name, values = options.sweep
            for value in values:
                params = {"alpha": options.alpha, "fusion": options.fusion, name: value}

                async def search(text: str, params=params) -> tuple[list[str], float]:
                    return await client.search(search_body(text, entity_id, options.k, params))

                point_run = SystemRun("sweep", "edgeindex", "hybrid", params, ingest.ready, search)
                await measure([point_run], queries, 1)
                point = {"value": value, "metrics": metrics.evaluate(dataset.qrels, point_run.run, options.k),
                         "latency_ms": metrics.latency_summary(point_run.latencies_ms)}
                sweep_points.append(point)
                progress(f"sweep {name}={value}: " + ", ".join(f"{m} {v:.4f}" for m, v in point["metrics"].items()))

    model_id = next((r.extra["model_id"] for r in runs if r.system == "chroma"), "")
    return {
        "dataset": {"name": dataset.name, "path": str(dataset.path), "qrels": str(dataset.qrels_path),
                    "documents": len(dataset.corpus),
                    "queries": len(dataset.queries), "judged_queries": len(queries),
                    "judgements": sum(len(g) for g in dataset.qrels.values()), "warnings": dataset.warnings},
        "config": {"k": options.k, "modes": list(options.modes), "alpha": options.alpha, "fusion": options.fusion,
                   "baselines": list(options.baselines), "repeat": passes, "entity_id": entity_id,
                   "model_id": model_id or None, "reused_entity": bool(options.entity),
                   "settled": settled,
                   "ingest": {"seconds": round(ingest.seconds, 1),
                                                           "ready": ingest.ready, "chunks": ingest.chunks,
                                                           "failed": ingest.failed},
                   "relevance": "grade >= 1 is relevant; NDCG uses linear gain (grade / log2(rank + 1))",
                   "latency": "each query run `repeat` times on every system, one request at a time, systems "
                              "interleaved query by query, after one untimed warm-up query per system",
                   # other work on the machine moves the latency percentiles: say how busy it was
                   "machine": {"python": platform.python_version(), "platform": platform.platform(),
                               "cpus": os.cpu_count(), "load_average_1m_before": round(load_before[0], 2),
                               "load_average_1m_after": round(os.getloadavg()[0], 2)},
                   "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
        "systems": (systems := {r.key: r.summary(dataset.qrels, options.k, queries) for r in runs}),
        "routing": routing_summary.oracle(systems),
        "sweep": {"param": options.sweep[0], "points": sweep_points} if options.sweep else None,
    }


@contextlib.asynccontextmanager
async def loaded_entity(dataset: Dataset, endpoints: Endpoints, options: Options,
                        progress: Callable[[str], None]) -> AsyncIterator[tuple[EdgeIndexClient, str, Any, bool]]:
    """An entity holding the dataset's corpus, ingested through the workers, and a client with a key for
    it: (client, entity id, the ingest outcome, whether the database was settled). The key this makes is
    revoked at the end, so a run leaves no active key behind."""
    documents = list(dataset.corpus.values())
    key_id = None
    if options.entity:
        entity_id, key = options.entity, endpoints.admin_key
        progress(f"entity {entity_id}: checking that it holds all {len(documents)} documents")
    else:
        entity_id = entity_name(dataset)
        async with EdgeIndexClient(endpoints.upload_url, endpoints.search_url, endpoints.admin_key) as admin:
            await admin.create_entity(entity_id, name=f"edgeindex eval of {dataset.name}")
            key_id, key = await admin.create_key_with_id(entity_id)
        progress(f"entity {entity_id}: uploading {len(documents)} documents through the upload worker")
    try:
        async with EdgeIndexClient(endpoints.upload_url, endpoints.search_url, key) as client:
            ingest = await client.ingest(entity_id, documents, source=f"beir:{dataset.name}",
                                         concurrency=options.concurrency, window=options.window,
                                         timeout=options.ingest_timeout, upload=not options.entity,
                                         progress=progress)
            if ingest.failed:
                progress(f"warning: {len(ingest.failed)} documents failed to ingest "
                         f"(first: {next(iter(ingest.failed.items()))})")
            yield client, entity_id, ingest, await _settle(endpoints.dsn, progress)
    finally:
        if key_id is not None:
            async with EdgeIndexClient(endpoints.upload_url, endpoints.search_url, endpoints.admin_key) as admin:
                await admin.revoke_key(key_id)


async def _settle(dsn: str | None, progress: Callable[[str], None]) -> bool:
    """VACUUM ANALYZE after the bulk load, as autovacuum would soon do anyway.

    Otherwise autovacuum works through the fresh chunks and term statistics while the
    queries are timed, on the same two cores: measurements of a transient, not of the
    system (an in-process baseline built a moment ago has nothing to clean up).
    """
    if not dsn:
        return False
    from ..bindings.database import Database
    from .explain import vacuum_analyze

    started = time.perf_counter()
    db = Database(dsn, min_size=1, max_size=1, name="EVAL")
    await db.open()
    try:
        await vacuum_analyze(db)
    finally:
        await db.close()
    progress(f"database settled (VACUUM ANALYZE) in {time.perf_counter() - started:.1f}s")
    return True


async def _chroma(endpoints: Endpoints, entity_id: str, options: Options,
                  progress: Callable[[str], None]) -> tuple[SystemRun, Callable[[], None]]:
    from ..bindings.ai import LOCAL_MODELS, MINILM, local_embedder
    from ..search.service import prepare_query_embedding
    from .baselines import ChromaBaseline, read_chunk_vectors

    if not endpoints.dsn:
        raise ValidationError("--compare chroma reads the stored vectors back from Postgres: pass --dsn "
                              "with the stack's database", field="dsn")
    vectors = await read_chunk_vectors(endpoints.dsn, entity_id)
    # the packaged model that stored the vectors (by its model id), when it is one
    packaged = {spec.model_id for spec in LOCAL_MODELS.values()}
    embedder = local_embedder(model=vectors.model_id if vectors.model_id in packaged else MINILM.name)
    if vectors.model_id and vectors.model_id != embedder.model_id:
        raise ModelMismatchError(f"the stack stored vectors of {vectors.model_id!r} but this process embeds "
                                 f"queries with {embedder.model_id!r}: Chroma would compare different models")
    progress(f"chroma: indexing {len(vectors.chunk_ids)} chunk vectors read back from Postgres")
    prepare_query_embedding(embedder)  # embed each query exactly as the search worker does
    chroma = ChromaBaseline(vectors, embedder.encode_query_sync)

    async def search(text: str) -> tuple[list[str], float]:
        return chroma.search(text, options.k)

    return SystemRun("chroma", "chroma", "vector", {"space": "cosine"}, len(set(vectors.document_ids)), search,
                     {"chunks": len(vectors.chunk_ids), "model_id": vectors.model_id}), chroma.close


async def _model(name: str, endpoints: Endpoints, entity_id: str, dataset: Dataset, options: Options,
                 progress: Callable[[str], None]) -> list[SystemRun]:
    """``--compare model:NAME``: the entity's chunks embedded with NAME (a backfill beside the serving
    vectors, ``edgeindex models``), searched densely, and fused with BM25 by reciprocal rank."""
    from ..bindings.ai import local_embedder, local_model
    from ..bindings.database import Database
    from ..errors import BindingError
    from ..models import backfill as backfills
    from ..search.service import prepare_query_embedding
    from .baselines import (
        RRF_DEPTH,
        RRF_K,
        BM25Baseline,
        DenseBaseline,
        FusedBaseline,
        read_chunk_vectors,
        read_model_vectors,
    )

    if not endpoints.dsn:
        raise ValidationError(f"--compare model:{name} embeds the stored chunks with {name}: pass --dsn with the "
                              "stack's database", field="dsn")
    try:
        spec = local_model(name)
    except BindingError as exc:
        raise ValidationError(f"--compare model:{name}: {exc}", field="compare") from None
    embedder = local_embedder(model=spec.name)
    db = Database(endpoints.dsn, min_size=1, max_size=2, name="EVAL")
    await db.open()
    try:
        serving, _ = await backfills.serving_model(db)
        embedded = 0
        if spec.model_id != serving:
            progress(f"model {spec.name}: embedding the entity's chunks beside the serving vectors")
            done = await backfills.backfill(db, embedder, entity_ids=[entity_id], duty=1)
            embedded = done.embedded
            progress(f"model {spec.name}: {done.embedded} chunks embedded ({done.chunks_per_second:.1f}/s)")
    finally:
        await db.close()
    vectors = (await read_chunk_vectors(endpoints.dsn, entity_id) if spec.model_id == serving
               else await read_model_vectors(endpoints.dsn, entity_id, spec.model_id))
    prepare_query_embedding(embedder)
    dense = DenseBaseline(vectors, embedder.encode_query_sync)
    fused = FusedBaseline(dense, BM25Baseline(list(dataset.corpus), [d.content for d in dataset.corpus.values()]))
    documents = len(set(vectors.document_ids))
    extra = {"model_id": spec.model_id, "chunks": len(vectors.chunk_ids), "embedded": embedded}

    async def dense_search(text: str) -> tuple[list[str], float]:
        return dense.search(text, options.k)

    async def fused_search(text: str) -> tuple[list[str], float]:
        return fused.search(text, options.k)

    key = f"{MODEL_BASELINE}{spec.name}"
    return [SystemRun(key, "model", "vector", {"model": spec.name, "search": "exact"}, documents, dense_search,
                      extra),
            SystemRun(f"{key}+bm25", "model+bm25", "hybrid",
                      {"model": spec.name, "fusion": "rrf", "rrf_k": RRF_K, "depth": RRF_DEPTH}, documents,
                      fused_search, extra)]


def _bm25(dataset: Dataset, options: Options, progress: Callable[[str], None]) -> SystemRun:
    from .baselines import BM25Baseline

    bm25 = BM25Baseline(list(dataset.corpus), [d.content for d in dataset.corpus.values()])
    progress(f"bm25: indexed {len(dataset.corpus)} documents ({bm25.description})")

    async def search(text: str) -> tuple[list[str], float]:
        return bm25.search(text, options.k)

    return SystemRun("bm25", "bm25", "text", {"engine": bm25.description}, len(dataset.corpus), search)
