"""Request bodies of the upload worker, checked strictly with pydantic.

Unknown fields are refused and types are strict (no ``"10"`` for 10, no ``"yes"``
or ``1`` for true); ``validation.parse`` turns every problem into a 400 naming the
field. Query strings arrive as text, so their models convert (``lax`` below).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from ..errors import PayloadTooLarge, UnsupportedMediaType
from ..validation import CollectionName, DocumentId, parse  # noqa: F401  (parse: re-exported for the upload worker)

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64,
                                       pattern=r"^[^\x00-\x1f\x7f,]+$")]
Title = Annotated[str, StringConstraints(strip_whitespace=True, max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$")]
Source = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500,
                                          pattern=r"^[^\x00-\x1f\x7f]+$")]
Filename = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255,
                                            pattern=r"^[^\x00-\x1f\x7f]+$")]
MAX_METADATA_BYTES = 16 * 1024
MAX_TAGS = 50



class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Query(BaseModel):
    """A query string: every value is text, so numbers and booleans are converted from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DocumentFields(_Request):
    """What describes a document, in an upload request or the query of a direct upload."""

    title: Title | None = None
    source: Source | None = None
    tags: Annotated[list[Tag], Field(max_length=MAX_TAGS)] | None = None
    filename: Filename | None = None
    # the index of the tenant's documents this one belongs to (POST /indices/select, search's `collections`)
    collection: CollectionName | None = None

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))  # duplicates add nothing


class DirectUploadQuery(DocumentFields):
    """Query of a direct upload: the document fields, and whether identical bytes may be skipped."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    # bytes identical to the live version: no new version, metadata updated in place. On by default:
    # re-syncing a folder must cost only what changed (``skip_unchanged=false`` forces a new version)
    skip_unchanged: bool = True


class UploadRequest(DocumentFields):
    document_id: DocumentId | None = None
    content_type: str
    size_bytes: int = Field(ge=0)
    metadata: dict[str, Any] | None = None
    multipart: bool = False  # ask for a multipart upload below the size threshold too

    @field_validator("metadata")
    @classmethod
    def _metadata_small(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and len(json.dumps(value)) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata must serialize to at most {MAX_METADATA_BYTES} bytes of JSON")
        return value


class PartETag(_Request):
    part_number: int = Field(ge=1, le=10_000)
    etag: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class CompleteRequest(_Request):
    upload_id: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    parts: Annotated[list[PartETag], Field(min_length=1, max_length=10_000)]


class ListQuery(_Query):
    status: Literal["pending", "processing", "ready", "failed"] | None = None
    after: DocumentId | None = None
    limit: int = Field(100, ge=1, le=1000)


def content_type(raw: str | None, allowed: list[str], *, field: str = "content_type") -> str:
    """The media type without parameters, if allowed; text must be UTF-8."""
    if not raw or not raw.strip():
        raise UnsupportedMediaType(f"{field} is required (one of {', '.join(allowed)})", field=field)
    base, _, params = raw.partition(";")
    media = base.strip().lower()
    if media not in allowed:
        raise UnsupportedMediaType(f"{field} {media!r} is not accepted; allowed: {', '.join(allowed)}", field=field)
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8", "us-ascii"):
            raise UnsupportedMediaType(f"{field}: charset {value.strip()!r} is not supported; upload UTF-8 text",
                                       field=field)
    return media


def check_size(size: int, limit: int, *, field: str = "size_bytes") -> None:
    if size > limit:
        raise PayloadTooLarge(f"{field}: {size} bytes is more than the limit of {limit} bytes (MAX_UPLOAD_BYTES)",
                              field=field)
