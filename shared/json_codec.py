"""JSON in and out of every worker: orjson for answers, and the checks a request body passes before
anything downstream sees it (depth, NUL, lone surrogates). No HTTP here, so the services that
encode or decode JSON themselves (the search caches) import it without the HTTP layer."""

from __future__ import annotations

import json
from datetime import date, datetime, time
from typing import Any

import orjson

from .errors import ValidationError

MAX_JSON_DEPTH = 32

# Datetimes and dataclasses pass through to encode_default (not orjson's own forms), so every
# answer, whichever encoder writes it, carries one timestamp form: ISO 8601 with a ``T``.
ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def encode_default(value: Any) -> Any:
    """What JSON has no type for: timestamps as ISO 8601 (``2026-12-01T22:40:52.19+00:00``), a float
    subclass (numpy's float64) as a number, anything else as its string."""
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    return float(value) if isinstance(value, float) else str(value)


def encode_json(body: Any) -> bytes:
    try:
        return orjson.dumps(body, default=encode_default, option=ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):  # what orjson refuses (ints over 64 bits, odd keys)
        return json.dumps(body, default=encode_default).encode()


def check_json_value(value: Any, path: str = "", depth: int = 0) -> None:
    """Refuse what JSON allows but nothing downstream can store: deep nesting, NUL, lone surrogates."""
    if depth > MAX_JSON_DEPTH:
        raise ValidationError(f"{path or 'body'}: nested more than {MAX_JSON_DEPTH} levels deep",
                              field=path or "body")
    if isinstance(value, str):
        _check_string(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            _check_string(key, where)
            check_json_value(item, where, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_json_value(item, f"{path}.{i}" if path else str(i), depth + 1)


def _check_string(value: str, path: str) -> None:
    if "\x00" in value:
        raise ValidationError(f"{path or 'body'}: must not contain NUL characters", field=path or "body")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{path or 'body'}: not valid Unicode (a lone surrogate)", field=path or "body") from None


def decode_json_object(raw: bytes) -> dict:
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"body is not valid JSON: {exc}", field="body") from None
    except RecursionError:
        raise ValidationError(f"body: nested more than {MAX_JSON_DEPTH} levels deep", field="body") from None
    if not isinstance(body, dict):
        raise ValidationError("body must be a JSON object", field="body")
    check_json_value(body)
    return body


def check_text(value: str, field: str) -> str:
    """A header, query or path value on its way to the database: no NUL, valid Unicode."""
    _check_string(value, field)
    return value
