"""What every request model shares: identifiers, the pydantic → 400 conversion, content hashes.

One place for each, so the upload and search workers (and the MCP server and SDK
of later issues) can never disagree on what an id is or how a bad field is named.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import AfterValidator, BaseModel, StringConstraints, TypeAdapter

from .errors import ValidationError

# Entity ids appear in object keys, run ids and URLs as they are: a conservative alphabet.
ENTITY_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
# Document ids are whatever a corpus already uses (file paths, URLs, `<dbpedia:Babylon_5:_Voices>`,
# spaces, any script): stored as given, URL-encoded in routes, never used raw in an object key.
MAX_DOCUMENT_ID_BYTES = 512


def _document_id(value: str) -> str:
    if not value.strip():
        raise ValueError("a document id must contain a visible character")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError("a document id must not contain control characters")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("a document id must be valid Unicode (no lone surrogates)") from None
    if size > MAX_DOCUMENT_ID_BYTES:
        raise ValueError(f"a document id is at most {MAX_DOCUMENT_ID_BYTES} bytes of UTF-8 ({size} given)")
    return value


# Names of tools, indices and collections: identifiers agents and people write, usable in a route.
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$"

EntityId = Annotated[str, StringConstraints(pattern=ENTITY_ID_PATTERN)]
CollectionName = Annotated[str, StringConstraints(strip_whitespace=True, pattern=NAME_PATTERN)]
DocumentId = Annotated[str, StringConstraints(min_length=1), AfterValidator(_document_id)]

M = TypeVar("M", bound=BaseModel)
_DOCUMENT_ID = TypeAdapter(DocumentId)


def document_id(value: str, *, field: str = "document_id") -> str:
    """A document id from a route or query, checked as request bodies check theirs."""
    try:
        return _DOCUMENT_ID.validate_python(value)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"{field}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}",
                              field=field) from None


def field_name(loc: tuple) -> str:
    return ".".join(str(part) for part in loc) or "body"


def parse(model: type[M], data: Any, *, context: dict | None = None) -> M:
    """``model`` validated from ``data``, or one ValidationError (400) naming the first bad field."""
    try:
        return model.model_validate(data, context=context)
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        field = field_name(first["loc"])
        if first["type"] == "extra_forbidden":
            message = f"unknown field {field!r}"
        elif first["type"] == "missing":
            message = f"{field} is required"
        else:
            message = f"{field}: {first['msg'].removeprefix('Value error, ')}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
        raise ValidationError(message, field=field) from None


def content_hash(data: bytes | str) -> str:
    """The one hash that says two contents are the same (documents' bytes, chunks' text, definitions)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()
