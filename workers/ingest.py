"""Ingest worker: consumes object-created events and runs the ingestion workflow per document version."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from edgeindex import api_models, language
from edgeindex.errors import NotFound, ValidationError
from edgeindex.history.retention import Retention
from edgeindex.ingest.reconciler import Reconciler, ReconcileSettings
from edgeindex.ingest.service import IngestService
from edgeindex.ingest.workflow import IngestSettings
from edgeindex.models.jobs import JobRunner
from edgeindex.runtime import memtrace
from edgeindex.runtime.http import Routes
from edgeindex.selection.collections import CollectionRefresher
from edgeindex.tenancy import Tenancy

routes = Routes()
log = logging.getLogger(__name__)


@dataclass
class Services:
    tenancy: Tenancy
    ingest: IngestService
    background: set[asyncio.Task]
    reconciler: Reconciler | None = None


async def startup(env) -> Services:
    settings = IngestSettings(chunk_tokens=env.var("CHUNK_TOKENS", int),
                              chunk_overlap_tokens=env.var("CHUNK_OVERLAP_TOKENS", int),
                              summary_sentences=env.var("SUMMARY_SENTENCES", int),
                              max_document_bytes=env.var("MAX_DOCUMENT_BYTES", int),
                              max_retries=env.worker.queues.consumers[0].max_retries,
                              enrich_chunks=env.var("ENRICH_CHUNKS", bool),
                              max_runs=env.var("MAX_RUNS", int), history=Retention.of(env))
    embedder = env.AI.embedder  # the local model has these knobs; a remote provider has none of them
    if threads := env.var("MODEL_THREADS"):
        getattr(embedder, "set_threads", lambda n: None)(threads)
    run_on = getattr(embedder, "run_batches_on", None)
    if run_on is not None:  # batches on ONNX Runtime: ~0.67x torch's CPU per passage (bindings/ai.py)
        await asyncio.to_thread(run_on, "onnx")  # a first load exports the graph (seconds)
    getattr(embedder, "set_batch_size", lambda n: None)(env.var("MODEL_BATCH_SIZE"))
    # py3langid's model, loaded now rather than by the first document's upsert
    await asyncio.to_thread(language.preload)
    ingest = IngestService(db=env.DB, bucket=env.BUCKET, kv=env.KV, embedder=env.AI.embedder,
                           llm=getattr(env.AI, "llm", None), workflow=env.INGEST_WORKFLOW, settings=settings)
    services = Services(Tenancy(env.DB), ingest, set())
    # Versions whose queue message was lost are queued again (RECONCILE_*; edgeindex.ingest.reconciler).
    if (queue := env.bindings.get("INGEST_QUEUE")) is not None:
        services.reconciler = Reconciler(db=env.DB, bucket=env.BUCKET, queue=queue,
                                         settings=ReconcileSettings(every=env.var("RECONCILE_EVERY_SECONDS"),
                                                                    after=env.var("RECONCILE_AFTER_SECONDS"),
                                                                    lease=env.var("RECONCILE_LEASE_SECONDS"),
                                                                    per_sweep=env.var("RECONCILE_MAX")),
                                         received=ingest.receiving)
    else:
        log.warning("no INGEST_QUEUE producer binding: lost queue messages are not re-sent while running")
    # Runs a crashed process left unfinished resume now, not after their visibility timeout.
    # Collection profiles follow their documents (debounced; edgeindex.selection.collections).
    # Model jobs asked for through the admin API run here (edgeindex.models.jobs).
    for work in (ingest.resume_unfinished(), CollectionRefresher(env.DB, env.AI.embedder, env.KV).run(),
                 JobRunner(env.DB).run(),
                 *([services.reconciler.run()] if services.reconciler else [])):
        task = asyncio.create_task(work)
        services.background.add(task)
        task.add_done_callback(services.background.discard)
    if (trace := memtrace.start_if_enabled()) is not None:  # EDGEINDEX_MEMTRACE_FILE (diagnostics)
        services.background.add(trace)
    return services


async def fetch(request, services: Services, ctx):
    return await routes.fetch(request, services, ctx)


async def queue(batch, services: Services, ctx):
    await services.ingest.handle_batch(batch)


@routes.get("/runs", query=api_models.RunQuery, response=api_models.RunStatus, auth="admin")
async def run_status(request, services: Services, ctx):
    """A run's checkpoints, and which steps this process executed for it (admin; diagnostics)."""
    await services.tenancy.require_admin(request.headers)
    run_id = request.query.get("id")
    if not run_id:
        raise ValidationError("query parameter id (the run id) is required", field="id")
    return await services.ingest.run_status(run_id)


@routes.get("/outcomes", query=api_models.OutcomesQuery, response=api_models.Outcomes, auth="admin",
            summary="How this process settled each queue message about a document")
async def outcomes(request, services: Services, ctx):
    """How this process settled each queue message about a document, in order (admin; diagnostics)."""
    await services.tenancy.require_admin(request.headers)
    entity_id, document_id = request.query.get("entity_id"), request.query.get("document_id")
    if not entity_id or not document_id:
        raise ValidationError("query parameters entity_id and document_id are required",
                              field="document_id" if entity_id else "entity_id")
    return {"entity_id": entity_id, "document_id": document_id,
            "outcomes": services.ingest.outcomes.get((entity_id, document_id), [])}


@routes.get("/batcher", response=api_models.BatcherStats, auth="admin",
            summary="How this process's embedding batcher shared model calls between runs")
async def batcher(request, services: Services, ctx):
    """Model calls, texts and isolated (split) calls of this process, and its grouped upsert commits
    (admin; diagnostics and benchmarks)."""
    await services.tenancy.require_admin(request.headers)
    return {**services.ingest.batcher.stats(), "writes": services.ingest.writer.stats(),
            "step_writes": services.ingest.workflow.writes.stats()}


@routes.get("/reconciler", response=api_models.ReconcilerStats, auth="admin",
            summary="What this process's reconciler swept and re-sent")
async def reconciler(request, services: Services, ctx):
    """Sweeps, versions looked at and re-sent (the latest listed) by this process (admin; diagnostics)."""
    await services.tenancy.require_admin(request.headers)
    if services.reconciler is None:
        raise NotFound("this ingest worker has no reconciler (no INGEST_QUEUE producer binding)")
    return services.reconciler.stats()
