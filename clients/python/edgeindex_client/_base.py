"""What the sync and async clients share: settings, the retry policy, turning replies into errors."""

from __future__ import annotations

import os
from typing import Any

import httpx
from tenacity import (
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from . import models as m
from ._ops import Call, RawResponse, Reply
from .errors import APIConnectionError, APIError, APITimeoutError, error_from_response

DEFAULT_UPLOAD_URL = "http://127.0.0.1:8787"
DEFAULT_SEARCH_URL = "http://127.0.0.1:8789"
RETRY_STATUSES = frozenset({429, 503})


class _Settings:
    def __init__(self, api_key: str | None, *, base_url: str | None, upload_url: str | None, search_url: str | None,
                 timeout: float | httpx.Timeout, max_retries: int, backoff: float, max_backoff: float) -> None:
        """``api_key`` defaults to $EDGEINDEX_API_KEY. ``base_url`` is one address for every route
        (a gateway in front of the workers); otherwise ``upload_url`` and ``search_url`` (or
        $EDGEINDEX_UPLOAD_URL / $EDGEINDEX_SEARCH_URL, default the dev stack's ports)."""
        base_url = base_url or os.environ.get("EDGEINDEX_URL")
        self.api_key = api_key if api_key is not None else os.environ.get("EDGEINDEX_API_KEY")
        self.urls = {
            "upload": (upload_url or base_url or os.environ.get("EDGEINDEX_UPLOAD_URL") or DEFAULT_UPLOAD_URL).rstrip("/"),
            "search": (search_url or base_url or os.environ.get("EDGEINDEX_SEARCH_URL") or DEFAULT_SEARCH_URL).rstrip("/"),
        }
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff

    def request_args(self, call: Call) -> dict[str, Any]:
        headers = dict(call.headers)
        # Presigned URLs carry their own signature; our key must never travel to object storage.
        if call.service is not None:
            url = self.urls[call.service] + call.path
            # a header the caller set itself wins (probes send wrong or foreign keys on purpose)
            if self.api_key and not any(name.lower() == "authorization" for name in headers):
                headers["Authorization"] = f"Bearer {self.api_key}"
        else:
            url = call.path
        args: dict[str, Any] = {"method": call.method, "url": url, "headers": headers, "params": call.params}
        if call.json is not None:
            args["json"] = call.json
        elif call.content is not None:
            args["content"] = call.content
        return args

    def retrying(self) -> dict[str, Any]:
        """tenacity arguments: 429/503 and connections that never opened are retried, with backoff."""
        # exponential with jitter, so clients refused together do not come back together
        base = wait_exponential(multiplier=self.backoff, max=self.max_backoff) + wait_random(0, self.backoff)

        def wait(state) -> float:
            delay = base(state)
            exc = state.outcome.exception() if state.outcome else None
            after = getattr(exc, "retry_after", None)
            return max(delay, min(after, self.max_backoff)) if after else delay

        return {"retry": retry_if_exception(_retryable), "stop": stop_after_attempt(self.max_retries + 1),
                "wait": wait, "reraise": True}


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, APIError):
        return exc.status in RETRY_STATUSES
    # Nothing reached the server: safe to send again whatever the method.
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def to_reply(response: httpx.Response) -> Reply:
    body: Any = None
    if response.content and "json" in response.headers.get("content-type", ""):
        try:
            body = response.json()
        except ValueError:
            body = None
    if response.status_code >= 400:
        error = error_from_response(response.status_code, body, response.text)
        after = response.headers.get("retry-after")
        error.retry_after = float(after) if after and after.replace(".", "", 1).isdigit() else None  # type: ignore[attr-defined]
        raise error
    return Reply(response.status_code, {k.lower(): v for k, v in response.headers.items()}, body)


def raw_response(response: httpx.Response) -> RawResponse:
    body: Any = response.content or None
    if body is not None and "json" in response.headers.get("content-type", ""):
        try:
            body = response.json()
        except ValueError:
            pass  # not JSON after all: the bytes, as sent
    return RawResponse(response.status_code, {k.lower(): v for k, v in response.headers.items()}, body)


def raw_call(method: str, path: str, service: str | None, json: Any, content: bytes | None,
             params: dict[str, str] | None, headers: dict[str, str] | None) -> Call:
    if json is not None and content is not None:
        raise ValueError("send either json or content, not both")
    return Call(method.upper(), path, service=service, json=json, content=content, params=params,  # type: ignore[arg-type]
                headers=dict(headers or {}))


def transport_error(exc: httpx.TransportError, url: str) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"timed out: {url}: {exc!r}")
    return APIConnectionError(f"cannot reach {url}: {exc!r}")


def search_request(query: str, options: dict[str, Any]) -> m.SearchRequest:
    return m.SearchRequest(query=query, **{k: v for k, v in options.items() if v is not None})


def select_body(model: type[m._Request], query: str, options: dict[str, Any]) -> dict[str, Any]:
    # every selection request model has a query field; their common base does not declare it
    return model(query=query, **{k: v for k, v in options.items() if v is not None}).to_json()  # type: ignore[call-arg]


def tools_from(document: Any) -> list[dict[str, Any]]:
    """The tool definitions of an MCP ``tools/list`` result or an OpenAI ``tools`` array.

    Accepted as exported: a JSON-RPC response (``{"result": {"tools": [...]}}``), its result
    (``{"tools": [...]}``), or a list of OpenAI (``{"type": "function", "function": {...}}``),
    MCP or plain items. The server normalises each item (``POST /entities/{entity}/tools``)."""
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]
    if isinstance(document, dict) and isinstance(document.get("tools"), list):
        document = document["tools"]
    if not isinstance(document, list) or not all(isinstance(t, dict) for t in document):
        raise ValueError("expected an MCP tools/list result ({\"tools\": [...]}) or an OpenAI tools array ([...])")
    return document
