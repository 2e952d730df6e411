"""Typed request and response models.

Requests mirror the server's own models (``edgeindex.search.request``,
``edgeindex.ingest.requests``; a unit test keeps their field names in step) but
leave every option unset by default, so the server's defaults apply and a
client never pins an old default. Responses accept fields they do not know
(``extra="allow"``): a newer server does not break an older client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The JSON body: only what was set, so the server's defaults apply to the rest."""
        return self.model_dump(mode="json", exclude_none=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- tenancy ----------------------------------------------------------------------------

EntityKind = Literal["user", "group", "network", "community"]


class EntityCreate(_Request):
    id: str
    kind: EntityKind
    name: str | None = None


class Entity(_Response):
    id: str
    kind: str
    name: str = ""
    created_at: datetime | None = None


class KeyCreate(_Request):
    name: str
    entity_ids: list[str] | None = None
    admin: bool | None = None


class CreatedKey(_Response):
    """A new API key; ``key`` is the secret, shown this once."""

    id: str
    key: str
    name: str
    entity_ids: list[str]
    admin: bool = False


class APIKey(_Response):
    id: str
    name: str
    is_admin: bool = False
    entity_ids: list[str] = []
    created_at: datetime | None = None
    revoked_at: datetime | None = None


class RevokedKey(_Response):
    id: str
    revoked: bool


# --- uploads and documents -----------------------------------------------------------------

class UploadRequest(_Request):
    content_type: str
    size_bytes: int
    document_id: str | None = None
    title: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    filename: str | None = None
    collection: str | None = None
    metadata: dict[str, Any] | None = None
    multipart: bool | None = None


class PresignedPut(_Response):
    method: str = "PUT"
    url: str
    headers: dict[str, str] = {}
    expires_in: int | None = None


class PresignedPart(_Response):
    part_number: int
    url: str


class MultipartUpload(_Response):
    upload_id: str
    part_size: int
    parts: list[PresignedPart]
    complete_url: str
    expires_in: int | None = None


class UploadTicket(_Response):
    """Where to put a new version's bytes: ``upload`` (one PUT) or ``multipart`` (parts, then complete)."""

    document_id: str
    entity_id: str
    version: int
    object_key: str
    status: str
    upload: PresignedPut | None = None
    multipart: MultipartUpload | None = None


class Document(_Response):
    document_id: str
    entity_id: str
    version: int
    ready_version: int | None = None
    status: Literal["pending", "processing", "ready", "failed"] | str
    step: str | None = None
    error: str | None = None
    title: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    collection: str | None = None
    metadata: dict[str, Any] | None = None
    content_type: str | None = None
    size_bytes: int | None = None
    filename: str | None = None
    chunk_count: int | None = None
    chunks_embedded: int | None = None
    chunks_reused: int | None = None
    summary: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # direct uploads with skip_unchanged: the bytes were the live version's, no new version
    unchanged: bool = False


class BulkDocument(_Request):
    """One document of ``upload_many`` (a line of ``POST /entities/{entity_id}/documents``)."""

    document_id: str
    text: str | None = None
    content_base64: str | None = None  # binary types (PDF): the bytes, base64
    content_type: str | None = None    # the server's default: text/plain
    title: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    filename: str | None = None
    collection: str | None = None
    skip_unchanged: bool | None = None  # the server's default: true


class BulkItemError(_Response):
    error: str
    message: str
    field: str | None = None


class BulkItem(_Response):
    line: int
    document_id: str | None = None
    outcome: Literal["accepted", "unchanged", "failed"] | str
    status: int
    version: int | None = None
    document_status: str | None = None
    error: BulkItemError | None = None


class BulkResult(_Response):
    entity_id: str
    accepted: int
    unchanged: int
    failed: int
    results: list[BulkItem]


class DocumentPage(_Response):
    documents: list[Document]
    next_after: str | None = None


class DeletedDocument(_Response):
    deleted: bool
    document_id: str
    entity_id: str
    chunks_deleted: int = 0
    objects_deleted: int = 0
    cache_entries_invalidated: int = 0


# --- search ------------------------------------------------------------------------------------

class SearchFilters(_Request):
    document_ids: list[str] | None = None
    sources: list[str] | None = None
    tags: list[str] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    exclude_document_ids: list[str] | None = None
    exclude_chunk_ids: list[str] | None = None


class SearchInclude(_Request):
    text: bool | None = None
    summary: bool | None = None
    neighbours: int | None = None


class SearchRequest(_Request):
    query: str
    k: int | None = None
    entity_ids: list[str] | None = None
    filters: SearchFilters | None = None
    strategy: Literal["auto", "hybrid", "text", "vector"] | None = None
    alpha: float | None = Field(None, ge=0, le=1)
    fusion: Literal["linear", "rrf"] | None = None
    vector_threshold: float | None = Field(None, ge=0, le=1)
    text_threshold: float | None = Field(None, ge=0, le=1)
    trigram_threshold: float | None = Field(None, ge=0, le=1)
    text_mode: Literal["any", "websearch"] | None = None
    dedupe: bool | None = None
    rerank: bool | None = None
    include: SearchInclude | None = None
    cache: bool | None = None
    order: Literal["best_first", "reverse"] | None = None
    enhance: Literal["auto", "none"] | list[Literal["prf", "synonyms", "hyde"]] | None = None
    collections: list[str] | Literal["auto"] | None = None
    trajectory: str | None = None
    seen: Literal["exclude", "include", "mark"] | None = None
    as_of: datetime | None = None   # the documents as they were at this time (never cached)


class Scores(_Response):
    vector: float = 0.0
    text: float = 0.0
    trigram: float = 0.0
    fused: float | None = None
    rerank: float | None = None


class ResultDocument(_Response):
    title: str | None = None
    source: str | None = None
    tags: list[str] | None = None
    summary: str | None = None


class Neighbour(_Response):
    chunk_id: str
    position: int
    start_char: int | None = None
    end_char: int | None = None
    text: str | None = None


class SearchResult(_Response):
    chunk_id: str
    document_id: str
    entity_id: str
    position: int
    start_char: int | None = None
    end_char: int | None = None
    score: float
    scores: Scores
    document: ResultDocument
    text: str | None = None
    neighbours: list[Neighbour] | None = None
    seen: bool | None = None   # seen: "mark": the trajectory had returned it
    version: int | None = None  # as_of: the version of the document the chunk belonged to then


class TrajectoryStep(_Response):
    """What a search or an expansion added to its trajectory."""

    id: str
    step: int
    seen: str
    novelty: dict[str, float]   # chunks, documents: the share of a plain answer that is new (0: nothing new)
    left_out: int
    tokens: dict[str, int]      # step, total
    chunks: int
    documents: int


class SearchResponse(_Response):
    results: list[SearchResult]
    entity_ids: list[str]
    corrections: dict[str, list[str]] = {}
    model_id: str | None = None   # the embedding model of the query's vector
    count: int
    cache: str
    took_ms: float
    timings: dict[str, float] | None = None
    search_id: str | None = None
    routing: dict[str, Any] | None = None
    enhancement: dict[str, Any] | None = None
    collections: dict[str, Any] | None = None   # what `collections` made of the scope, when given
    trajectory: TrajectoryStep | None = None     # when the search named one


# --- trajectories ---------------------------------------------------------------------------

class ExpandRequest(_Request):
    chunk_id: str
    mode: Literal["neighbours", "document", "similar"] | None = None
    k: int | None = None
    entity_ids: list[str] | None = None
    include: SearchInclude | None = None


class ExpandedResult(_Response):
    chunk_id: str
    document_id: str
    entity_id: str
    position: int
    score: float
    text: str | None = None


class TrajectoryExpansion(_Response):
    results: list[ExpandedResult]
    count: int
    trajectory: TrajectoryStep


class TrajectoryInfo(_Response):
    id: str
    steps: int
    chunks: int
    documents: int
    tokens: int
    ttl_seconds: float


class TrajectoryGrounding(_Response):
    """What a trajectory touched: its documents (with summaries), its queries, the chunks it returned."""

    id: str
    steps: int
    tokens: int
    chunks: list[dict[str, Any]]
    documents: list[dict[str, Any]]
    queries: list[dict[str, Any]]


# --- tool and index selection (routes of the tool/index-selection work; kept loose on purpose) ---

class ToolSelectRequest(_Request):
    model_config = ConfigDict(extra="allow")  # options the selection routes add pass straight through
    query: str
    entity_ids: list[str] | None = None
    k: int | None = None
    threshold: float | None = None


class IndexSelectRequest(_Request):
    model_config = ConfigDict(extra="allow")
    query: str
    entity_ids: list[str] | None = None
    k: int | None = None


class Selection(_Response):
    """The answer of ``/tools/select`` or ``/indices/select``; fields as the server sends them."""


class SelectedTool(_Response):
    """One tool of a selection: ``definition`` is what to hand an LLM (named by ``alias``). Only what
    every server sends is required, so an older or trimmed answer still parses."""

    name: str
    alias: str | None = None          # ^[a-zA-Z0-9_-]{1,64}$; feedback takes it as well as the name
    entity_id: str = ""
    definition: dict[str, Any] = {}
    score: float
    p: float | None = None            # the calibrated probability that the request needs the tool
    scores: dict[str, float] = {}
    reason: str = ""
    tokens: int = 0
    category: str | None = None
    tags: list[str] = []
    requires: list[str] = []


class ToolSelection(Selection):
    query: str = ""
    entity_ids: list[str] = []
    registry_size: int = 0
    tools: list[SelectedTool] = []
    count: int = 0
    confident: bool = False
    fallback: str | None = None
    tokens: dict[str, Any] = {}
    # with an unsure answer: the find_tools definition for the LLM and the select call it stands for
    search_tool: dict[str, Any] | None = None
    took_ms: float = 0.0


class SelectedIndex(_Response):
    name: str
    entity_id: str = ""
    kind: str = ""
    description: str = ""
    score: float
    scores: dict[str, float] = {}
    evidence: dict[str, Any] = {}


class IndexSelection(Selection):
    query: str = ""
    indices: list[SelectedIndex] = []
    count: int = 0
    confident: bool = False
    registry_size: int = 0
    took_ms: float = 0.0


class IndexDescriptor(_Request):
    """An external index (a search engine's index, a database) described for index selection."""

    name: str
    description: str = ""
    fields: list[str] = []
    tables: list[str] = []


class IndexRegistration(_Response):
    entity_id: str
    registered: int
    embedded: int
    unchanged: int
    model_id: str | None = None


class ToolRegistration(_Response):
    entity_id: str
    registered: int
    embedded: int
    updated_without_embedding: int = 0
    unchanged: int
    model_id: str | None = None
    unresolved_requires: list[str] = []
    tools: list[dict[str, Any]] = []


class Collection(_Response):
    """A collection of a tenant's documents with the profile the ingest worker keeps."""

    name: str
    description: str = ""
    documents: int = 0
    ready_documents: int = 0
    pending: bool = False
    profile: dict[str, Any] | None = None


class CollectionList(_Response):
    entity_id: str
    count: int
    collections: list[Collection]


# --- document history -------------------------------------------------------------------------------

class DocumentVersion(_Response):
    version: int
    live_from: datetime
    live_to: datetime | None = None   # None while live
    chunk_count: int


class Retention(_Response):
    versions: int     # replaced versions kept per document (0: none)
    days: int         # days a replaced version is kept (0: no age bound)
    own: dict[str, int | None] = Field(default_factory=dict)  # the entity's own bounds (None: the deployment's)
    entity_id: str | None = None


class DocumentVersions(_Response):
    entity_id: str
    document_id: str
    live_version: int | None = None
    pruned_to: int | None = None      # versions up to this one were dropped by retention
    versions: list[DocumentVersion]
    retention: Retention


class ChangedChunk(_Response):
    position: int
    chunk_id: str
    text: str
    previous: ChangedChunk | None = None   # in ``changed``: the chunk it replaces


class DocumentChanges(_Response):
    """What changed between two versions of a document, chunk by chunk."""

    entity_id: str
    document_id: str
    since_version: int | None = None   # None: before the document's first version
    until_version: int | None = None
    added: list[ChangedChunk]
    removed: list[ChangedChunk]
    changed: list[ChangedChunk]
    unchanged: int
    moved: int
