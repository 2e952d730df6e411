"""Errors raised by the client.

Every error the server sends is JSON ``{"error": code, "message": ..., "field": ...}``;
``APIError`` keeps all three and the HTTP status, and its subclass says which kind
it is, so callers can catch ``NotFoundError`` or read ``exc.field``.
"""

from __future__ import annotations

from typing import Any


class EdgeIndexClientError(Exception):
    """Base class of everything this package raises on purpose."""


class APIConnectionError(EdgeIndexClientError):
    """The server could not be reached (after the retries), or did not answer in time."""


class APITimeoutError(APIConnectionError):
    """The request timed out."""


class APIError(EdgeIndexClientError):
    """The server answered with an error status."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 body: Any = None) -> None:
        where = f" (field {field!r})" if field else ""
        super().__init__(f"{status} {code}: {message}{where}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.body = body


class BadRequestError(APIError):
    """400: a request field is missing, malformed or out of range (``field`` names it)."""


class AuthenticationError(APIError):
    """401: missing, unknown or revoked API key."""


class PermissionDeniedError(APIError):
    """403: the key is not granted the entity, or the route needs an admin key."""


class NotFoundError(APIError):
    """404."""


class ConflictError(APIError):
    """409: e.g. the entity exists already, or a multipart upload was replaced."""


class PayloadTooLargeError(BadRequestError):
    """413: the body is larger than the deployment's MAX_UPLOAD_BYTES."""


class UnsupportedMediaTypeError(BadRequestError):
    """415: the content type is not one the deployment accepts."""


class UnprocessableError(APIError):
    """422: e.g. a document that cannot be ingested."""


class RateLimitError(APIError):
    """429, still after the retries."""


class ServerError(APIError):
    """5xx (503 still after the retries)."""


class DocumentFailedError(EdgeIndexClientError):
    """``wait_ready``: ingestion of the document failed; ``document.error`` says why."""

    def __init__(self, document: Any) -> None:
        super().__init__(f"document {document.document_id!r} failed: {document.error}")
        self.document = document


class WaitTimeoutError(EdgeIndexClientError, TimeoutError):
    """``wait_ready``: the document was not ready in time; ``document`` is its last status."""

    def __init__(self, document: Any, timeout: float) -> None:
        super().__init__(f"document {document.document_id!r} still {document.status} after {timeout:g}s")
        self.document = document


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    409: ConflictError, 413: PayloadTooLargeError, 415: UnsupportedMediaTypeError, 422: UnprocessableError,
    429: RateLimitError,
}


def error_from_response(status: int, body: Any, text: str = "") -> APIError:
    """The error for a response with status >= 400 (``body`` its JSON, if it was JSON)."""
    if isinstance(body, dict) and "error" in body:
        code, message, field = str(body["error"]), str(body.get("message", "")), body.get("field")
    else:  # not one of ours (a proxy, the object store): keep what it said
        code, message, field = "http_error", (text or "")[:500], None
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    return cls(status, code, message, field, body)
