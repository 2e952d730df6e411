"""Answers of the admin page's own JSON routes (documented in the upload worker's OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class DocumentCounts(_Body):
    pending: int
    processing: int
    ready: int
    failed: int


class TenantOverview(_Body):
    id: str
    kind: str
    name: str
    created_at: str
    keys: int = Field(description="active API keys granted this entity")
    documents: DocumentCounts


class Overview(_Body):
    entities: list[TenantOverview]


class TelemetryReport(_Body):
    """The router's report (``edgeindex.routing.report.summary``) as it returns it; 404 while there is none."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": True})



class ServingModel(_Body):
    model_id: str
    dimension: int


class ModelVectors(_Body):
    model_id: str
    dimension: int
    entity_ids: list[str] | None = Field(description="the entities its last backfill covered; null: every entity")
    state: Literal["running", "stopped", "done"] = Field(description="its last backfill's state")
    vectors: int = Field(description="chunks in that scope with a vector of this model for their current text")
    chunks: int = Field(description="chunks in that scope")
    covered: float = Field(description="vectors / chunks")
    chunks_per_second: float | None = Field(description="embedding and writing, rests excluded")
    started_at: str
    updated_at: str
    finished_at: str | None


class ShadowSearches(_Body):
    shadow_model: str
    serving_model: str = Field(description="the model that served the answers it was compared with")
    searches: int = Field(description="answers compared (MODEL_SHADOW_SAMPLE of the computed ones)")
    overlap: float = Field(description="mean share of a served answer's chunks the shadow model also ranked in its top k")
    shadow_ms_p50: float = Field(description="embedding and searching with the shadow model, after the answer")
    last_at: str


class ModelJob(_Body):
    """A model change run by an ingest worker (``POST /admin/api/models/jobs``)."""

    id: int
    action: Literal["backfill", "migrate", "cutover", "rollback"]
    model_id: str = Field(description="the model it embeds with (a rollback's: the model it returns to)")
    entity_ids: list[str] | None = Field(description="the entities it moves; null: the deployment's model")
    duty: float = Field(description="share of the time its backfill works")
    state: Literal["queued", "running", "done", "stopped", "failed"]
    stop_requested: bool
    attempts: int = Field(description="times an ingest worker claimed it: more than one, a runner was lost")
    result: dict | None = Field(description="its backfill's and cutover's figures, as `edgeindex models` prints them")
    error: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None


class ModelsStatus(_Body):
    """``edgeindex models status``: the serving model, each model with vectors beside it, the
    shadow searches (MODEL_SHADOW) logged, the cutovers and the latest model jobs."""

    serving: ServingModel
    models: list[ModelVectors]
    entities: dict[str, str] = Field(description="entities another model than the deployment's serves, and that model")
    shadow: list[ShadowSearches]
    cutovers: list[dict]
    jobs: list[ModelJob]


class ModelJobRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    action: Literal["backfill", "migrate", "cutover", "rollback"] = Field(
        description="migrate: a backfill, then a cutover; rollback: back to the model the last cutover replaced")
    model: str | None = Field(None, min_length=1, max_length=200,
                              description="a packaged model by name or id (multilingual-e5-small); none for a rollback")
    duty: float | None = Field(None, gt=0, le=1, description="share of the time the backfill works (default 0.5)")
    entity_ids: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(
        None, min_length=1, max_length=1000,
        description="only these entities: their chunks are backfilled, cut over to the model, or (rollback) "
                    "returned to the deployment's model; the others stay as they are")


class DropRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(min_length=1, max_length=200, description="the model whose kept vectors to delete")


class Dropped(_Body):
    model_id: str
    deleted: int = Field(description="vectors deleted")
