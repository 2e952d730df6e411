"""Answers of the admin page's own JSON routes (documented in the upload worker's OpenAPI)."""

from __future__ import annotations

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

