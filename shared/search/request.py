"""The ``POST /search`` body: parsed strictly, sanitized, every problem named by its field.

Strict types (no "5" for 5, no 1 for true) and ``extra="forbid"`` so a typo in a
field name is a 400 instead of a silently ignored option. Limits that are
deployment settings (MAX_K, MAX_QUERY_CHARS) arrive through the validation
context.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..validation import NAME_PATTERN, CollectionName, DocumentId, EntityId, parse
from . import defaults

Label = Annotated[str, Field(min_length=1, max_length=200)]
Score = Annotated[float, Field(ge=0.0, le=1.0)]
Timestamp = Annotated[datetime, Field(strict=False)]  # ISO 8601 strings arrive as text in JSON
MAX_LIST = 1000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACE = re.compile(r"\s+")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _no_control(value: str, what: str) -> str:
    if _CONTROL.search(value):
        raise ValueError(f"{what} must not contain control characters")
    return value


class Filters(_Strict):
    document_ids: Annotated[list[DocumentId], Field(min_length=1, max_length=MAX_LIST)] | None = None
    sources: Annotated[list[Label], Field(min_length=1, max_length=MAX_LIST)] | None = None
    tags: Annotated[list[Label], Field(min_length=1, max_length=MAX_LIST)] | None = None  # any of them
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    updated_after: Timestamp | None = None
    updated_before: Timestamp | None = None
    exclude_document_ids: Annotated[list[DocumentId], Field(max_length=MAX_LIST)] | None = None
    exclude_chunk_ids: Annotated[list[Annotated[UUID, Field(strict=False)]], Field(max_length=MAX_LIST)] | None = None

    @field_validator("sources", "tags")
    @classmethod
    def _clean_labels(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for item in value:
                _no_control(item, "labels")
        return value

    @field_validator("created_after", "created_before", "updated_after", "updated_before")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # A timestamp without an offset is taken as UTC, never as the server's local time.
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if value is not None:
            try:
                value.astimezone(UTC)
            except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last representable instant
                raise ValueError("timestamp is out of range once converted to UTC") from None
        return value

    @model_validator(mode="after")
    def _ranges(self) -> Filters:
        for lo, hi in (("created_after", "created_before"), ("updated_after", "updated_before")):
            a, b = getattr(self, lo), getattr(self, hi)
            if a is not None and b is not None and a >= b:
                raise ValueError(f"{lo} must be earlier than {hi}")
        return self

    def normalized(self) -> dict[str, Any]:
        """Filters in a canonical form (sorted, deduplicated, UTC): cache keys and SQL params."""
        out: dict[str, Any] = {}
        for name in ("document_ids", "sources", "tags", "exclude_document_ids"):
            value = getattr(self, name)
            out[name] = sorted(set(value)) if value else None
        out["exclude_chunk_ids"] = sorted({str(u) for u in self.exclude_chunk_ids}) if self.exclude_chunk_ids else None
        for name in ("created_after", "created_before", "updated_after", "updated_before"):
            value = getattr(self, name)
            out[name] = value.astimezone(UTC).isoformat() if value else None
        return out


class Include(_Strict):
    text: bool = True
    summary: bool = False
    # neighbouring chunks on each side of a hit (true = 1)
    neighbours: Annotated[int, Field(ge=0, le=defaults.MAX_NEIGHBOURS)] = 0

    @field_validator("neighbours", mode="before")
    @classmethod
    def _count(cls, value: object) -> object:
        return int(value) if isinstance(value, bool) else value


class SearchRequest(_Strict):
    query: str
    k: Annotated[int, Field(ge=1)] = defaults.K
    entity_ids: Annotated[list[EntityId], Field(min_length=1, max_length=100)] | None = None
    filters: Filters = Filters()
    # "auto": the router picks text, vector or hybrid with an alpha per query (shared/routing/);
    # none: the deployment's default (ROUTER_DEFAULT); alpha applies to "hybrid" only
    strategy: Literal["auto", "hybrid", "text", "vector"] | None = None
    alpha: Score = defaults.ALPHA
    fusion: Literal["linear", "rrf"] = defaults.FUSION
    vector_threshold: Score = defaults.VECTOR_THRESHOLD
    text_threshold: Score = defaults.TEXT_THRESHOLD
    trigram_threshold: Score = defaults.TRIGRAM_THRESHOLD
    text_mode: Literal["any", "websearch"] = defaults.TEXT_MODE
    dedupe: bool = False
    rerank: bool = False
    include: Include = Include()
    cache: bool = True
    # "reverse": best last, for answer prompts that lose the middle of a long context (the best
    # result then sits next to the question); part of the cache scope like every other option
    order: Literal["best_first", "reverse"] = "best_first"
    # query enhancement (shared/search/enhance/): "auto" applies what the evaluation chose for this
    # deployment, "none" nothing, or a list of "prf", "synonyms", "hyde"; part of the cache scope
    enhance: Literal["auto", "none"] | Annotated[
        list[Literal["prf", "synonyms", "hyde"]], Field(max_length=3)] = "auto"
    # only documents of these collections; "auto": the collections index selection chooses
    # (shared/selection/collections.py: choose)
    collections: Literal["auto"] | Annotated[list[CollectionName], Field(min_length=1, max_length=100)] | None = None
    # the documents as they were at this time (search/as_of.py, over shared/history/): never cached
    as_of: Timestamp | None = None

    @field_validator("as_of")
    @classmethod
    def _as_of(cls, value: datetime | None) -> datetime | None:
        return Filters._aware(value)

    @field_validator("collections", mode="before")
    @classmethod
    def _collections_shape(cls, value: object) -> object:
        # said here, before the union is tried: its per-member errors would name neither the field nor the item
        if value is None or value == "auto":
            return value
        if not isinstance(value, list) or not value:
            raise ValueError('collections must be "auto" or a non-empty list of collection names')
        for i, name in enumerate(value):
            if not isinstance(name, str) or not re.match(NAME_PATTERN, name.strip()):
                raise ValueError(f"collections.{i}: {name!r} is not a collection name "
                                 "(1-128 letters, digits or _ . : -, not starting with punctuation)")
        return value

    @field_validator("collections")
    @classmethod
    def _collections(cls, value: str | list[str] | None) -> str | list[str] | None:
        return sorted(set(value)) if isinstance(value, list) else value  # canonical: one cache key

    @field_validator("query")
    @classmethod
    def _query(cls, value: str, info: ValidationInfo) -> str:
        value = normalize_query(value)
        if not value:
            raise ValueError("query must contain some text")
        limit = (info.context or {}).get("max_query_chars")
        if limit and len(value) > limit:
            raise ValueError(f"query is longer than {limit} characters (MAX_QUERY_CHARS)")
        return value

    @field_validator("k")
    @classmethod
    def _k(cls, value: int, info: ValidationInfo) -> int:
        limit = (info.context or {}).get("max_k")
        if limit and value > limit:
            raise ValueError(f"k must be at most {limit} (MAX_K)")
        return value


def normalize_query(text: str) -> str:
    """Unicode-normalized, case-folded, single-spaced, control characters dropped.

    Safe for every retriever: Postgres full text and pg_trgm fold case themselves, and so
    does all-MiniLM-L6-v2; so equal normalized queries are equal searches. multilingual-e5-small
    keeps case, and its queries are folded too: as written, they score lower in hybrid and auto
    (docs/benchmarks.md, "Query case and a cased model").
    """
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub(" ", text)
    return _SPACE.sub(" ", text).strip().casefold()


def parse_request(body: dict, *, max_k: int, max_query_chars: int) -> SearchRequest:
    """A SearchRequest, or a 400 naming the first bad field."""
    return parse(SearchRequest, body, context={"max_k": max_k, "max_query_chars": max_query_chars})
