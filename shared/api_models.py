"""Response bodies of the workers' HTTP routes, as pydantic models.

Request bodies are validated by the models in ``edgeindex.search.request``,
``edgeindex.uploads.models`` and ``edgeindex.tenancy``; these describe what the routes answer. The OpenAPI
spec (``edgeindex.runtime.openapi``) is generated from both, and the integration
test of the spec validates real answers against these models, so they describe
what the server sends rather than what someone remembered. Handlers keep returning
plain dicts: a model is documentation and a check, not a second code path.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .selection.models import SearchedCollections


class _Body(BaseModel):
    # Fields may be added to an answer without breaking clients: the spec says so.
    model_config = ConfigDict(extra="allow")


class ErrorBody(_Body):
    """Every error: a stable code, a message, and the request field at fault when there is one."""

    error: str = Field(description="stable error code, e.g. invalid_request, forbidden, not_found")
    message: str
    field: str | None = Field(None, description="the request field at fault (dotted path for nested fields)")
    request_id: str | None = Field(None, description="the id the server's log has this request under")


class Health(_Body):
    worker: str
    status: Literal["ok"]
    uptime_seconds: float
    gc_frozen_objects: int = Field(0, description="objects from start-up kept out of garbage collections")
    bindings: dict[str, Any]
    vars: list[str]
    consumers: list[dict[str, Any]]
    routes: list[str]
    entity_models: dict[str, str] = Field(default_factory=dict, description=(
        "entities this worker searches with another model than the deployment's, and that model "
        "(edgeindex models cutover --entity)"))


# --- tenancy -------------------------------------------------------------------------------------

class Entity(_Body):
    id: str
    kind: Literal["user", "group", "network", "community"]
    name: str
    created_at: datetime


class EntityList(_Body):
    entities: list[Entity]


class CreatedKey(_Body):
    id: str
    key: str = Field(description="the secret; shown only in this answer (stored hashed)")
    name: str
    entity_ids: list[str]
    admin: bool


class APIKey(_Body):
    id: str
    name: str
    is_admin: bool
    entity_ids: list[str]
    created_at: datetime
    revoked_at: datetime | None


class KeyList(_Body):
    keys: list[APIKey]


class RevokedKey(_Body):
    id: str
    revoked: Literal[True]


# --- uploads and documents ------------------------------------------------------------------------

class PresignedPut(_Body):
    method: Literal["PUT"]
    url: str = Field(description="PUT the bytes here, with the headers below, before expires_in seconds")
    headers: dict[str, str]
    expires_in: int


class PresignedPart(_Body):
    part_number: int
    url: str


class MultipartUpload(_Body):
    upload_id: str
    part_size: int = Field(description="bytes per part; the last part holds the rest")
    expires_in: int
    parts: list[PresignedPart]
    complete_url: str = Field(description="POST {upload_id, parts: [{part_number, etag}]} here when all parts are in")


class UploadTicket(_Body):
    """Where to put the bytes of a new document version: one presigned PUT, or a multipart upload."""

    document_id: str
    entity_id: str
    version: int
    object_key: str
    status: Literal["pending"]
    upload: PresignedPut | None = None
    multipart: MultipartUpload | None = None


class ReceivedUpload(_Body):
    etag: str = Field(description="also in the ETag header: a multipart part's etag for the complete call")


class CompletedUpload(_Body):
    document_id: str
    entity_id: str
    version: int
    status: Literal["pending"]
    object_key: str
    size_bytes: int


class DocumentSummary(_Body):
    document_id: str
    entity_id: str
    version: int
    ready_version: int | None
    status: Literal["pending", "processing", "ready", "failed"]
    step: str | None = Field(description="the ingestion step in progress (or where it failed)")
    error: str | None = Field(description="why ingestion failed")
    title: str | None
    source: str | None
    tags: list[str] | None
    collection: str | None = Field(None, description="the collection the document belongs to")
    content_type: str
    size_bytes: int | None
    chunk_count: int | None
    chunks_embedded: int | None = Field(description="chunks embedded for the last version")
    chunks_reused: int | None = Field(description="chunks whose text was unchanged, so not embedded again")
    created_at: datetime
    updated_at: datetime


class Document(DocumentSummary):
    metadata: dict[str, Any] | None
    filename: str | None
    summary: str | None
    unchanged: bool | None = Field(None, description="direct upload with skip_unchanged: same bytes, no new version")
    object_warning: str | None = Field(None, description="the object behind the ready version changed after it "
                                                         "was ingested (the index keeps what was ingested)")


class BulkError(_Body):
    error: str = Field(description="the error code a single upload of this line would have answered")
    message: str
    field: str | None = None


class BulkItem(_Body):
    line: int = Field(description="1-based line number in the request body")
    document_id: str | None
    outcome: Literal["accepted", "unchanged", "failed"] = Field(
        description="accepted: a new version, ingestion follows; unchanged: the same bytes as the live version, "
                    "no new version; failed: see error, nothing stored for this line")
    status: int = Field(description="the HTTP status a single direct upload of this line would have answered")
    version: int | None = None
    document_status: Literal["pending", "processing", "ready", "failed"] | None = None
    error: BulkError | None = None


class BulkUploadResult(_Body):
    entity_id: str
    accepted: int
    unchanged: int
    failed: int
    results: list[BulkItem] = Field(description="one per non-blank line, in order")


class WriterStats(_Body):
    commits: int = Field(description="upsert transactions committed by this ingest process")
    documents: int = Field(description="documents committed in them")
    isolated: int = Field(description="grouped commits that failed and were redone one document at a time")
    mean_documents_per_commit: float | None


class StepWriteStats(_Body):
    commits: int = Field(description="transactions holding the step engine's statements (start, step, checkpoint, finish)")
    statements: int = Field(description="statements committed in them")
    sent: int = Field(description="statements sent to Postgres for them: a commit's statements of one kind go as one")
    isolated: int = Field(description="group commits that failed and were redone one statement at a time")
    mean_statements_per_commit: float | None
    mean_sent_per_commit: float | None


class BatcherStats(_Body):
    calls: int = Field(description="model calls made by this ingest process")
    texts: int = Field(description="chunk texts embedded in them")
    isolated: int = Field(description="shared calls that failed and were retried one document at a time")
    max_texts: int
    linger_ms: float
    fill: int | None = Field(default=None, description="texts a call waits for while runs are on their way")
    window_ms: float | None = Field(default=None, description="longest wait for them")
    mean_texts_per_call: float | None
    model_busy_s: float | None = Field(default=None, description="seconds spent in model calls")
    gathering_s: float | None = Field(default=None, description="seconds spent waiting for calls to fill")
    model_cpu_s: float | None = Field(default=None, description="CPU seconds of the model's thread in its calls")
    model_runqueue_s: float | None = Field(default=None, description="seconds the model's thread waited for "
                                                                      "a core in its calls")
    span_s: float | None = Field(default=None, description="seconds from the first model call's start to the "
                                                           "last one's end")
    writes: WriterStats | None = Field(default=None, description="how the runs' upserts shared transactions")
    step_writes: StepWriteStats | None = Field(default=None, description="how the runs' step-engine statements "
                                                                          "shared transactions")


class ReconciledVersion(_Body):
    entity_id: str
    document_id: str
    version: int
    reason: str = Field(description="why its event was re-sent (pending with no run, or a stopped run)")
    times: int = Field(description="how many times this process has re-sent it")
    at: float = Field(description="when (seconds since the epoch)")


class ReconcilerStats(_Body):
    enabled: bool = Field(description="false when RECONCILE_EVERY_SECONDS is 0")
    every_s: float
    after_s: float
    lease_s: float
    per_sweep: int
    sweeps: int = Field(description="sweeps this process ran (it held the sweep lock)")
    skipped_elsewhere: int = Field(description="rounds another ingest process held the sweep lock")
    skipped_backlog: int = Field(description="sweeps that sent nothing because messages waited in the queue")
    looked_at: int
    resent: int = Field(description="object-created events re-sent")
    given_up: int
    errors: int
    last_sweep_at: float | None
    recent: list[ReconciledVersion] = Field(description="the latest re-sent versions, oldest first")


class DocumentList(_Body):
    documents: list[DocumentSummary]
    next_after: str | None = Field(description="pass as ?after= for the next page; null on the last page")


class DeletedDocument(_Body):
    deleted: Literal[True]
    document_id: str
    entity_id: str
    chunks_deleted: int
    objects_deleted: int
    cache_entries_invalidated: int


# --- document history -------------------------------------------------------------------------------

class Retention(_Body):
    versions: int = Field(description="replaced versions kept per document (0: no history)")
    days: int = Field(description="days a replaced version is kept (0: no age bound)")
    own: dict[str, int | None] = Field(description="the entity's own bounds (null: the deployment's)")


class HistoryRetention(Retention):
    entity_id: str | None = None


class DocumentVersion(_Body):
    version: int
    live_from: datetime = Field(description="the commit that made it the live version")
    live_to: datetime | None = Field(description="the commit that replaced it; null while live")
    chunk_count: int


class DocumentVersions(_Body):
    entity_id: str
    document_id: str
    live_version: int | None
    pruned_to: int | None = Field(description="versions up to this one were dropped by retention")
    versions: list[DocumentVersion]
    retention: Retention


class ChangedChunk(_Body):
    position: int
    chunk_id: str
    text: str


class ReplacedChunk(ChangedChunk):
    previous: ChangedChunk = Field(description="the chunk it replaces, in the earlier version")


class DocumentChanges(_Body):
    entity_id: str
    document_id: str
    since_version: int | None = Field(description="null: before the document's first version (everything added)")
    until_version: int | None
    added: list[ChangedChunk]
    removed: list[ChangedChunk]
    changed: list[ReplacedChunk]
    unchanged: int = Field(description="chunks in both versions")
    moved: int = Field(description="of those, chunks whose position changed")


# --- search -----------------------------------------------------------------------------------------

class Scores(_Body):
    vector: float = Field(description="cosine similarity")
    text: float = Field(description="BM25 share of the best possible score for the query's words")
    trigram: float = Field(description="BM25 share of the vocabulary terms standing in for unknown words")
    fused: float | None = Field(None, description="the blended score, when a reranker replaced it")
    rerank: float | None = None


class ResultDocument(_Body):
    title: str | None
    source: str | None
    tags: list[str] | None
    summary: str | None = None


class Neighbour(_Body):
    chunk_id: str
    position: int
    start_char: int
    end_char: int
    text: str | None = None


class ChunkPlace(_Body):
    """Where a chunk sits: its entity, document, position and character span."""

    chunk_id: str
    document_id: str
    entity_id: str
    position: int
    start_char: int
    end_char: int


class SearchResult(ChunkPlace):
    score: float
    scores: Scores
    document: ResultDocument
    text: str | None = None
    neighbours: list[Neighbour] | None = None
    version: int | None = Field(None, description="as_of: the version of the document this chunk belonged to then")
    seen: bool | None = Field(None, description="a trajectory step with seen: mark: this chunk, or a copy of it, "
                                               "was returned before")


class TrajectoryTokens(_Body):
    step: int = Field(description="tokens of the text this step returned (cl100k_base)")
    total: int = Field(description="tokens of all text the trajectory returned")


class TrajectoryStepInfo(_Body):
    id: str
    step: int = Field(description="this search's number in the trajectory")
    seen: Literal["exclude", "include", "mark"]
    novelty: dict[str, float] = Field(description="chunks, documents: the share of what a search without the "
                                                  "trajectory would answer that is new to it (0: nothing new)")
    left_out: int = Field(description="results left out because the trajectory had them, or a copy (exclude)")
    tokens: TrajectoryTokens
    chunks: int = Field(description="chunks the trajectory has returned")
    documents: int = Field(description="documents those chunks come from")


class SearchResponse(_Body):
    results: list[SearchResult]
    entity_ids: list[str]
    corrections: dict[str, list[str]] = Field(description="query words no chunk holds, and what stood in for them")
    model_id: str | None = Field(None, description="the embedding model of the query's vector: only chunk vectors "
                                                   "of this model score (`scores.vector`)")
    count: int
    cache: Literal["exact", "semantic", "none", "bypassed"] = Field(
        description="where the answer came from: a cache, none (computed), or bypassed (the KV did not answer: "
                    "computed, and not stored)")
    took_ms: float
    timings: dict[str, float] | None = Field(None, description="embed_ms, semantic_lookup_ms, search_ms (or lexical_ms, route_ms, hybrid_ms), ... on a miss")
    enhancement: dict[str, Any] | None = Field(
        None, description="query enhancement: `applied` (prf, synonyms, hyde), `skipped` with the gate's reason, "
                          "`terms` (PRF), `synonyms`, `llm` outcomes (llm, cache, timeout, error), `ms`")
    collections: SearchedCollections | None = Field(None, description="what `collections` made of the scope, "
                                                                      "when the request gave it")
    search_id: str = Field(description="this search, for POST /feedback")
    routing: dict[str, Any] | None = Field(None, description="the strategy and alpha served, the router's features, "
                                           "model version and (shadow mode) the choice it logged")
    trajectory: TrajectoryStepInfo | None = Field(None, description="a step of a trajectory: what was new")
    as_of: datetime | None = Field(None, description="a search of the documents as they were then (uncached)")


class ExpandedResult(ChunkPlace):
    score: float = Field(description="neighbours, document: 1 / (1 + distance in positions); similar: cosine")
    document: ResultDocument
    text: str | None = None


class TrajectoryExpansion(_Body):
    results: list[ExpandedResult]
    count: int
    trajectory: TrajectoryStepInfo


class TrajectoryCreated(_Body):
    id: str
    steps: int
    chunks: int
    documents: int
    tokens: int
    ttl_seconds: float = Field(description="how long it lives after its last step")


class TrajectoryQuery(_Body):
    step: int
    query: str
    returned: int
    novelty: dict[str, float]
    tokens: int


class TrajectoryDocument(_Body):
    entity_id: str
    document_id: str
    current: bool = Field(description="false: the document was deleted since")
    title: str | None = None
    source: str | None = None
    summary: str | None = None
    status: str | None = None
    updated_at: str | None = None


class TrajectoryChunk(_Body):
    chunk_id: str
    entity_id: str
    document_id: str
    position: int
    step: int = Field(description="the step that first returned it")
    tokens: int
    text: str | None = Field(description="as stored now; null once a later version replaced the chunk")
    current: bool


class TrajectoryGrounding(_Body):
    id: str
    steps: int
    chunks: list[TrajectoryChunk]
    documents: list[TrajectoryDocument]
    tokens: int
    queries: list[TrajectoryQuery]


class TrajectoryDeleted(_Body):
    id: str
    deleted: bool


class FeedbackResponse(_Body):
    search_id: str
    rewards: dict[str, float] = Field(description="what each strategy bin would have earned on this feedback")
    scope: str | None = Field(description="the entity whose model override learns from it (none: the deployment's)")
    applied_in_version: int | None = Field(description="the model version this feedback produced, once enough "
                                                       "evidence was in")


# --- ingest worker (diagnostics) -----------------------------------------------------------------------

class RunQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="the workflow run id")


class OutcomesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entity_id: str = Field(description="the document's entity")
    document_id: str = Field(description="the document id")


class MessageOutcome(_Body):
    version: int
    action: str = Field(description="ack or retry")
    reason: str


class Outcomes(_Body):
    entity_id: str
    document_id: str
    outcomes: list[MessageOutcome]


class RunStatus(_Body):
    id: str
    status: str
    invocations: int
    current_step: str | None
    error: str | None
    steps: list[dict[str, Any]]
    executed_here: list[str]
