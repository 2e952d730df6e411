"""One error hierarchy for the whole library.

Every error carries a stable ``code`` and the HTTP status a worker maps it to, so
entrypoints translate errors in one place instead of guessing per call site.
"""

from __future__ import annotations


class EdgeIndexError(Exception):
    """Base class of every error edgeindex raises on purpose."""

    code = "internal"
    status = 500

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict:
        body = {"error": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


class ConfigError(EdgeIndexError):
    """wrangler.toml or an environment override is wrong; raised at start-up."""

    code = "config"

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None) -> None:
        where = ": ".join(part for part in (file, key) if part)
        super().__init__(f"{where}: {message}" if where else message, field=key)
        self.file = file
        self.key = key


class BindingError(EdgeIndexError):
    """A binding's backing service failed (S3, SQS, database, KV, model)."""

    code = "binding"
    status = 503


class KVConflict(BindingError):
    """A KV transaction's watched key changed before it committed: nothing of it was written."""

    code = "kv_conflict"
    status = 409


class KVUnavailable(BindingError):
    """The KV's server did not answer (Redis down, restarting or unreachable)."""

    code = "kv_unavailable"


class ObjectStoreError(BindingError):
    """S3 (or SQS) answered with an error; ``service_code`` is its code (``NoSuchKey``, ``InvalidPart``...)."""

    code = "object_store"

    def __init__(self, message: str, *, service_code: str = "") -> None:
        super().__init__(message)
        self.service_code = service_code

    @property
    def missing(self) -> bool:
        return self.service_code in ("NoSuchKey", "404", "NotFound", "NoSuchUpload")


class ValidationError(EdgeIndexError):
    """A request field is missing, malformed or out of range."""

    code = "invalid_request"
    status = 400


class PayloadTooLarge(ValidationError):
    code = "payload_too_large"
    status = 413


class UnsupportedMediaType(ValidationError):
    code = "unsupported_media_type"
    status = 415


class Unauthorized(EdgeIndexError):
    code = "unauthorized"
    status = 401


class Forbidden(EdgeIndexError):
    code = "forbidden"
    status = 403


class NotFound(EdgeIndexError):
    code = "not_found"
    status = 404


class RateLimited(EdgeIndexError):
    """Too many requests for this API key; ``retry_after`` seconds until one more is allowed."""

    code = "rate_limited"
    status = 429

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Conflict(EdgeIndexError):
    code = "conflict"
    status = 409


class ModelSwitching(EdgeIndexError):
    """This worker embeds with another model than the one the database now serves (a model cutover
    committed and the worker switches within seconds): the same request succeeds once it has."""

    code = "model_switching"
    status = 503

    def __init__(self, message: str, *, retry_after: float = 2.0, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.retry_after = retry_after


class Gone(EdgeIndexError):
    """What was asked for existed but is no longer kept (a document version past its retention)."""

    code = "gone"
    status = 410


class ModelMismatchError(EdgeIndexError):
    """The configured embedding model differs from the one the database's vectors came from."""

    code = "model_mismatch"


class IngestError(EdgeIndexError):
    """A document cannot be ingested (bad content); final, retrying will not help."""

    code = "ingest_failed"
    status = 422


class ReplayMismatch(EdgeIndexError):
    """A workflow run replayed different steps than it recorded (its code or inputs changed)."""

    code = "replay_mismatch"


class RunDeleted(EdgeIndexError):
    """A workflow run's record was deleted while it ran (its document was deleted): the run is over."""

    code = "run_deleted"


class StepFailed(EdgeIndexError):
    """A workflow step failed after its retries; keeps the underlying errors."""

    code = "step_failed"

    def __init__(self, step: str, errors: list[BaseException]) -> None:
        last = errors[-1] if errors else None
        super().__init__(f"step {step!r} failed after {len(errors)} attempt(s): {last}")
        self.step = step
        self.errors = errors
