"""Each worker's ``vars``, typed and bounded: what a key means, its default, its range.

``wrangler.toml`` sets them per worker (``[workers.<name>] vars = {...}``) and ``EDGEINDEX_VAR_<KEY>``
overrides one for a process; ``config.load`` checks them against the schema of the worker's entry
module (``workers/search.py`` → ``SearchVars``), so a typo or a value out of range stops start-up with
the key named, and ``env.var`` hands out the checked value. Every key is ours: Cloudflare's vars are
free-form strings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MiB = 1024 * 1024


class _Vars(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RateLimited(_Vars):
    RATE_LIMIT_PER_SECOND: float = Field(1000, ge=0, description="requests per second per API key (0: no limit)")


class HistoryVars(_Vars):
    HISTORY_VERSIONS: int = Field(20, ge=0, le=10_000, description="replaced versions of a document kept for "
                                  "changes and as_of (0: no history); an entity may set its own")
    HISTORY_DAYS: int = Field(90, ge=0, le=36_500, description="days a replaced version is kept (0: no age "
                              "bound); an entity may set its own")


class UploadVars(RateLimited, HistoryVars):
    MAX_UPLOAD_BYTES: int = Field(50 * MiB, ge=1, le=5 * 1024 * MiB, description="largest document accepted")
    MULTIPART_THRESHOLD_BYTES: int = Field(16 * MiB, ge=5 * MiB, description="uploads at least this large are multipart")
    MULTIPART_PART_BYTES: int = Field(8 * MiB, ge=5 * MiB, description="size of each part of a multipart upload")
    ALLOWED_TYPES: str = Field("text/plain,text/markdown,text/html,application/pdf,application/json",
                               min_length=1, description="comma-separated content types accepted")
    UPLOAD_SWEEP_SECONDS: float = Field(30, ge=0, description="between sweeps of expired upload grants "
                                                                    "and of history past its age bound (0: off)")
    SEARCH_URL: str = Field("", description="where the admin page's playground sends searches; empty: this "
                                            "host's search worker")


class IngestVars(HistoryVars):
    CHUNK_TOKENS: int = Field(200, ge=16, le=8192, description="tokens per chunk (the model's tokenizer)")
    CHUNK_OVERLAP_TOKENS: int = Field(30, ge=0, le=4096, description="tokens shared by neighbouring chunks")
    SUMMARY_SENTENCES: int = Field(5, ge=0, le=50, description="sentences of a document's extractive summary")
    MAX_DOCUMENT_BYTES: int = Field(50 * MiB, ge=1, description="larger documents fail with the reason")
    ENRICH_CHUNKS: bool = Field(False, description="an LLM's keywords and questions per new chunk "
                                                   "(needs services.ai.llm_model)")
    MODEL_THREADS: int = Field(1, ge=0, le=64, description="threads per model call (0: the runtime's default)")
    MODEL_BATCH_SIZE: int = Field(8, ge=1, le=2048, description="texts per forward pass of the model")
    MAX_RUNS: int = Field(128, ge=1, le=10_000, description="workflow runs in flight in one process")
    RECONCILE_EVERY_SECONDS: float = Field(30, ge=0, description="between reconciler sweeps (0: off)")
    RECONCILE_AFTER_SECONDS: float = Field(60, ge=0, description="a pending version with no run this old is "
                                                                 "sent again")
    RECONCILE_LEASE_SECONDS: float = Field(300, ge=1, description="a run that has not moved this long, its lock "
                                                                  "free, is sent again")
    RECONCILE_MAX: int = Field(200, ge=1, le=100_000, description="versions looked at per sweep")


class SearchVars(RateLimited):
    MAX_K: int = Field(100, ge=1, le=1000, description="largest k a search may ask for")
    MAX_QUERY_CHARS: int = Field(2000, ge=1, le=100_000, description="longest query accepted")
    SEMANTIC_CACHE_THRESHOLD: float = Field(0.95, gt=0, le=1, description="cosine at which a past query's answer "
                                                                          "is served for a new one")
    CACHE_TTL_SECONDS: float = Field(3600, gt=0, description="how long a cached answer is served")
    HNSW_EF_SEARCH: int = Field(40, ge=10, le=1000, description="candidates the HNSW walk keeps (pgvector's "
                                "hnsw.ef_search): more finds more of the exact top k in tenants of 100k+ "
                                "chunks; 100 costs ~1 ms per search more than 40 (docs/scale.md)")
    TRAJECTORY_TTL_SECONDS: float = Field(3600, gt=0, le=30 * 86400, description="how long a trajectory lives "
                                          "after its last step")
    TRAJECTORY_MAX_STEPS: int = Field(100, ge=1, le=10_000, description="searches one trajectory may hold")
    TRAJECTORY_MAX_CHUNKS: int = Field(2000, ge=1, le=100_000, description="chunks one trajectory may have "
                                       "returned (each is a few dozen bytes in the KV)")
    ROUTER_DEFAULT: Literal["auto", "hybrid"] = Field("auto", description="the strategy of a request that names "
                                                      "none: the router, or the fixed blend")
    ROUTER_SHADOW: bool = Field(False, description="the router decides and logs, the fixed blend serves")
    MODEL_SHADOW: str = Field("", description="a packaged embedding model whose backfilled vectors a share of "
                              "searches also asks after answering, logging both answers (edgeindex models "
                              "status); empty: off")
    MODEL_SHADOW_SAMPLE: float = Field(0.1, ge=0, le=1, description="the share of computed answers MODEL_SHADOW "
                                       "compares")
    ROUTER_TELEMETRY: bool = Field(True, description="one telemetry row per search (needed for feedback)")
    ROUTER_TELEMETRY_DAYS: int = Field(30, ge=1, le=3650, description="days telemetry rows are kept")
    ROUTER_LEARNING_RATE: float = Field(0.05, ge=0, le=1, description="step size of feedback updates")
    ROUTER_MAX_STEP: float = Field(0.05, ge=0, le=1, description="largest change of a weight per update")
    ROUTER_MAX_DRIFT: float = Field(0.5, ge=0, le=10, description="largest distance from the trained version")
    ROUTER_MIN_EVIDENCE: int = Field(20, ge=1, description="feedback events before the first update")


class MCPVars(SearchVars, HistoryVars):
    MAX_UPLOAD_BYTES: int = Field(1_000_000, ge=1, le=100 * MiB, description="largest document the upload "
                                                                             "tool accepts")


# A worker's schema, by its entry module's name.
SCHEMAS: dict[str, type[_Vars]] = {"upload": UploadVars, "ingest": IngestVars, "search": SearchVars, "mcp": MCPVars}
