"""wrangler.toml, read once and checked at start-up.

Binding keys reuse Cloudflare's names where the meaning is the same
(``r2_buckets``, ``kv_namespaces``, ``queues.producers``/``queues.consumers``,
``vectorize``, ``hyperdrive``, ``ai``, ``workflows``). Our additions are the
``[workers.<name>]`` tables (one file declares all three workers), ``port``,
``state_dir`` and the ``[services.*]`` tables that say where each backing
service lives. Any mistake stops start-up with the file, the key and what was
expected.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import worker_vars
from .errors import ConfigError

BindingName = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]*$")]
ResourceName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{1,62}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- bindings ---------------------------------------------------------------


class R2Bucket(_Strict):
    binding: BindingName
    bucket_name: ResourceName


class KVNamespace(_Strict):
    binding: BindingName
    id: ResourceName


class QueueProducer(_Strict):
    binding: BindingName
    queue: ResourceName


class QueueConsumer(_Strict):
    queue: ResourceName
    max_batch_size: int = Field(10, ge=1, le=100, description="messages per batch handed to the queue handler")
    max_batch_timeout: float = Field(1.0, ge=0, le=60, description="seconds a batch waits to fill")
    max_retries: int = Field(3, ge=0, le=100, description="deliveries retried before the dead-letter queue")
    max_concurrency: int = Field(1, ge=1, le=20, description="batches handled at once by one worker process")
    dead_letter_queue: ResourceName | None = Field(None, description="where messages go after max_retries")
    retry_delay: float = Field(1.0, ge=0, le=900, description="ours: first retry delay in seconds, doubling "
                                                              "per attempt")
    visibility_timeout: int = Field(120, ge=1, le=43200, description="ours: seconds a received message stays "
                                                                     "hidden, extended while it is worked on")


class Queues(_Strict):
    producers: list[QueueProducer] = []
    consumers: list[QueueConsumer] = []


class VectorizeIndex(_Strict):
    binding: BindingName
    index_name: ResourceName


class Hyperdrive(_Strict):
    binding: BindingName
    id: ResourceName
    # The ingest worker wants more: more runs in flight make bigger shared embedding batches.
    pool_max: int | None = Field(None, ge=1, le=500, description="ours: this worker's pool size instead of "
                                                                 "services.database.pool_max")


class AIBinding(_Strict):
    binding: BindingName


class RerankBinding(_Strict):
    """Ours: a TEI/Cohere-style ``/rerank`` endpoint. No url = declared but not configured
    (``rerank: true`` is then a 400); EDGEINDEX_RERANK_URL / EDGEINDEX_RERANK_MODEL set them."""

    binding: BindingName
    url: str = Field("", description="the /rerank endpoint; empty: declared but not configured")
    model: str = Field("", description="the model name sent with each rerank request")


class WorkflowBinding(_Strict):
    name: ResourceName
    binding: BindingName
    class_name: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")]


class Worker(_Strict):
    main: str = Field(description="the entry module, like workers/search.py")
    port: int = Field(ge=1, le=65535, description="ours: the HTTP port the worker listens on")
    processes: int = Field(1, ge=1, le=64, description="ours: copies of the worker serving one port "
                                                       "(SO_REUSEPORT), each its own process and event loop")
    route: str = "/"
    vars: dict[str, str | int | float | bool] = Field(default_factory=dict, description="the worker's settings "
                                                      "(typed per worker below)")
    vars_from: str | None = Field(None, description="ours: start from another worker's vars, then these "
                                                    "(search and mcp share theirs)")
    r2_buckets: list[R2Bucket] = []
    kv_namespaces: list[KVNamespace] = []
    queues: Queues = Queues()
    vectorize: list[VectorizeIndex] = []
    hyperdrive: list[Hyperdrive] = []
    ai: AIBinding | None = None
    rerank: RerankBinding | None = None
    workflows: list[WorkflowBinding] = []

    @field_validator("main")
    @classmethod
    def _main_is_python(cls, value: str) -> str:
        if not value.endswith(".py"):
            raise ValueError("expected a path to a .py entry module, like workers/search.py")
        return value

    @model_validator(mode="after")
    def _unique_bindings(self) -> Worker:
        seen: set[str] = set()
        for name in self.binding_names():
            if name in seen:
                raise ValueError(f"binding name {name} is declared twice")
            seen.add(name)
        return self

    def binding_names(self) -> list[str]:
        names = [b.binding for b in (*self.r2_buckets, *self.kv_namespaces, *self.queues.producers,
                                     *self.vectorize, *self.hyperdrive, *self.workflows)]
        if self.ai:
            names.append(self.ai.binding)
        if self.rerank:
            names.append(self.rerank.binding)
        return names


# --- services (ours) ---------------------------------------------------------


class ObjectStoreService(_Strict):
    endpoint: str = Field("", description="the S3 endpoint; empty: `edgeindex dev` starts an embedded one")
    public_endpoint: str = Field("", description="where clients reach the store, when that differs from where "
                                                 "workers do (http://minio:9000 inside compose, a public URL outside)")
    region: str = "us-east-1"
    access_key_id: str = "edgeindex"
    secret_access_key: str = "edgeindex"
    presign_expires: int = Field(900, ge=1, le=604800, description="seconds a presigned upload URL is valid")
    # S3 and R2 verify their presigned URLs; the embedded moto server verifies nothing, so `edgeindex dev`
    # hands out the upload worker's own, which it verifies and streams to the store
    uploads: Literal["presigned", "worker"] = Field("presigned", description="whose upload URLs clients get: "
                                                    "the store's presigned ones, or the upload worker's")


class QueueService(_Strict):
    endpoint: str = Field("", description="the SQS endpoint; empty: `edgeindex dev` starts an embedded one")
    region: str = "us-east-1"
    access_key_id: str = "edgeindex"
    secret_access_key: str = "edgeindex"
    poll_wait_seconds: int = Field(1, ge=0, le=20, description="long-poll wait of a receive")


class DatabaseService(_Strict):
    dsn: str = Field("", description="PostgreSQL with pgvector and pg_trgm; empty: `edgeindex dev` starts "
                                     "an embedded one")
    pool_min: int = Field(1, ge=0, le=100, description="connections each worker process keeps open")
    pool_max: int = Field(10, ge=1, le=500, description="connections each worker process may open")

    @model_validator(mode="after")
    def _pool_bounds(self) -> DatabaseService:
        if self.pool_min > self.pool_max:
            raise ValueError("pool_min must not exceed pool_max")
        return self


class KVService(_Strict):
    backend: Literal["diskcache", "redis"] = Field(
        "diskcache", description="the KV engine: diskcache (one host, embedded) or redis (shared by every host)")
    path: str = Field("kv", description="diskcache: its folder, relative to state_dir")
    url: str = Field("", description="redis: the server's URL (Redis 7 or Valkey); empty: `edgeindex dev` "
                                      "starts a redis-server under state_dir")
    default_ttl: int = Field(3600, ge=1, description="seconds a value lives when its writer names no TTL")


class AIService(_Strict):
    provider: Literal["local", "openai"] = Field("local", description="the packaged local model, or any "
                                                 "OpenAI-compatible HTTP endpoint")
    model: str = Field("all-MiniLM-L6-v2", description="the embedding model (local: all-MiniLM-L6-v2, English, "
                       "or multilingual-e5-small, any language)")
    base_url: str = Field("", description="the OpenAI-compatible endpoint (provider openai, and LLM calls)")
    api_key: str = ""
    dimension: int | None = Field(None, ge=1, le=16000, description="a remote model's vector size")
    # The router leans on full text outside the model's languages; a local model's are its own.
    languages: list[str] = Field(default_factory=list, max_length=200, description="a remote model's languages "
                                 "(ISO 639-1 codes; empty or * : any)")

    @field_validator("languages", mode="before")
    @classmethod
    def _languages_list(cls, value: Any) -> Any:
        # EDGEINDEX_AI_LANGUAGES="de,fr" (an environment variable is one string)
        return [code.strip() for code in value.split(",") if code.strip()] if isinstance(value, str) else value
    llm_model: str = Field("", description="an OpenAI-compatible chat model: LLM summaries, synonyms and HyDE "
                                           "when set")
    batch_size: int = Field(64, ge=1, le=2048, description="texts per model call")
    timeout: float = Field(30.0, gt=0, description="seconds an HTTP provider's call may take")

    @model_validator(mode="after")
    def _remote_needs_url(self) -> AIService:
        if self.provider == "openai" and not self.base_url:
            raise ValueError("provider 'openai' needs base_url")
        if self.provider == "openai" and not self.dimension:
            raise ValueError("provider 'openai' needs dimension (the model's vector size)")
        return self


class Services(_Strict):
    s3: ObjectStoreService = ObjectStoreService()
    sqs: QueueService = QueueService()
    database: DatabaseService = DatabaseService()
    kv: KVService = KVService()
    ai: AIService = AIService()


class EventNotification(_Strict):
    """Ours (R2's ``wrangler r2 bucket notification create``): object events to a queue."""

    bucket: ResourceName
    queue: ResourceName
    events: list[Literal["object-create"]] = ["object-create"]
    prefix: str = ""


class Config(_Strict):
    name: str = Field(description="the deployment's name")
    compatibility_date: str = ""
    state_dir: str = Field(".edgeindex", description="ours: embedded Postgres data, KV and S3 snapshots, "
                                                     "relative to this file")
    services: Services = Services()
    workers: dict[str, Worker]
    event_notifications: list[EventNotification] = []

    # where it was read from; set by load()
    path: Path = Path("wrangler.toml")
    # each worker's vars as its schema checked them (worker_vars.py), filled by parse()
    checked_vars: dict[str, Any] = Field(default_factory=dict, exclude=True)

    @field_validator("workers")
    @classmethod
    def _has_workers(cls, value: dict[str, Worker]) -> dict[str, Worker]:
        if not value:
            raise ValueError("declare at least one worker under [workers.<name>]")
        return value

    @model_validator(mode="after")
    def _ports_and_queues(self) -> Config:
        ports: dict[int, str] = {}
        for name, worker in self.workers.items():
            if worker.port in ports:
                raise ValueError(f"workers.{name}.port {worker.port} is also used by workers.{ports[worker.port]}")
            ports[worker.port] = name
        queues, buckets = set(self.queue_names()), set(self.bucket_names())
        for i, note in enumerate(self.event_notifications):
            if note.bucket not in buckets:
                raise ValueError(f"event_notifications[{i}].bucket {note.bucket!r} is not any worker's r2 bucket")
            if note.queue not in queues:
                raise ValueError(f"event_notifications[{i}].queue {note.queue!r} is not any worker's queue")
        return self

    @property
    def root(self) -> Path:
        return self.path.resolve().parent

    @property
    def state_path(self) -> Path:
        state = Path(self.state_dir)
        return state if state.is_absolute() else self.root / state

    def worker(self, name: str) -> Worker:
        try:
            return self.workers[name]
        except KeyError:
            known = ", ".join(sorted(self.workers))
            raise ConfigError(f"no worker named {name!r} (declared: {known})", file=str(self.path)) from None

    def queue_names(self) -> list[str]:
        """Every queue any worker produces to, consumes or dead-letters into."""
        names: list[str] = []
        for worker in self.workers.values():
            for p in worker.queues.producers:
                names.append(p.queue)
            for c in worker.queues.consumers:
                names.append(c.queue)
                if c.dead_letter_queue:
                    names.append(c.dead_letter_queue)
        return list(dict.fromkeys(names))

    def bucket_names(self) -> list[str]:
        return list(dict.fromkeys(b.bucket_name for w in self.workers.values() for b in w.r2_buckets))


# Environment variables that override a value of the file: (variable, path in the file).
ENV_OVERRIDES: list[tuple[str, tuple[str, ...]]] = [
    ("EDGEINDEX_STATE_DIR", ("state_dir",)),
    ("EDGEINDEX_S3_ENDPOINT", ("services", "s3", "endpoint")),
    ("EDGEINDEX_S3_PUBLIC_ENDPOINT", ("services", "s3", "public_endpoint")),
    ("EDGEINDEX_S3_REGION", ("services", "s3", "region")),
    ("EDGEINDEX_S3_UPLOADS", ("services", "s3", "uploads")),
    ("EDGEINDEX_SQS_ENDPOINT", ("services", "sqs", "endpoint")),
    ("EDGEINDEX_SQS_REGION", ("services", "sqs", "region")),
    ("AWS_ACCESS_KEY_ID", ("services", "s3", "access_key_id")),
    ("AWS_SECRET_ACCESS_KEY", ("services", "s3", "secret_access_key")),
    ("AWS_ACCESS_KEY_ID", ("services", "sqs", "access_key_id")),
    ("AWS_SECRET_ACCESS_KEY", ("services", "sqs", "secret_access_key")),
    ("EDGEINDEX_DATABASE_URL", ("services", "database", "dsn")),
    ("EDGEINDEX_KV_PATH", ("services", "kv", "path")),
    ("EDGEINDEX_KV_BACKEND", ("services", "kv", "backend")),
    ("EDGEINDEX_KV_URL", ("services", "kv", "url")),
    ("EDGEINDEX_AI_PROVIDER", ("services", "ai", "provider")),
    ("EDGEINDEX_AI_MODEL", ("services", "ai", "model")),
    ("EDGEINDEX_AI_BASE_URL", ("services", "ai", "base_url")),
    ("EDGEINDEX_AI_API_KEY", ("services", "ai", "api_key")),
    ("EDGEINDEX_AI_DIMENSION", ("services", "ai", "dimension")),
    ("EDGEINDEX_AI_LANGUAGES", ("services", "ai", "languages")),
    ("EDGEINDEX_LLM_MODEL", ("services", "ai", "llm_model")),
]


def _set_path(data: dict, path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            return  # the file has a scalar there; validation will name it
    node[path[-1]] = value


def apply_env(data: dict, environ: dict[str, str]) -> dict:
    for variable, path in ENV_OVERRIDES:
        if environ.get(variable):
            _set_path(data, path, environ[variable])
    for name, worker in (data.get("workers") or {}).items():
        if not isinstance(worker, dict):
            continue
        port = environ.get(f"EDGEINDEX_{name.upper()}_PORT")
        if port:
            worker["port"] = port
        if processes := environ.get(f"EDGEINDEX_{name.upper()}_PROCESSES"):
            worker["processes"] = processes
        if isinstance(worker.get("rerank"), dict):
            for variable, key in (("EDGEINDEX_RERANK_URL", "url"), ("EDGEINDEX_RERANK_MODEL", "model")):
                if environ.get(variable) is not None:
                    worker["rerank"][key] = environ[variable]
        values = worker.setdefault("vars", {})
        if not isinstance(values, dict):
            continue  # not a table: validation names it
        schema = _vars_schema(worker.get("main"))
        # every key the worker's schema declares can be overridden, also one the file leaves out
        for var in sorted(set(schema.model_fields if schema else ()) | set(values)):
            if (override := environ.get(f"EDGEINDEX_VAR_{var}")) is not None:
                values[var] = override
    return data


def _describe(error: dict) -> tuple[str, str]:
    key = ".".join(str(part) for part in error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return key, "unknown key (a typo, or a binding type edgeindex does not support)"
    if kind == "missing":
        return key, "required key is missing"
    got = error.get("input")
    shown = f", got {got!r}" if got is not None and not isinstance(got, dict | list) else ""
    return key, f"{error['msg']}{shown}"


def inherit_vars(data: dict, *, path: Path) -> dict:
    """Each ``vars_from`` worker's vars: those of the worker it names, then its own on top."""
    workers = data.get("workers") or {}
    for name, worker in workers.items():
        if not isinstance(worker, dict) or worker.get("vars_from") is None:
            continue
        source = worker["vars_from"]
        other = workers.get(source) if isinstance(source, str) else None
        if not isinstance(other, dict) or source == name:
            raise ConfigError(f"no other worker named {source!r} to take vars from", file=str(path),
                              key=f"workers.{name}.vars_from")
        if other.get("vars_from") is not None:
            raise ConfigError(f"workers.{source} takes its own vars from another worker: name that one",
                              file=str(path), key=f"workers.{name}.vars_from")
        worker["vars"] = {**(other.get("vars") or {}), **(worker.get("vars") or {})}
    return data


def _vars_schema(main: Any) -> type[BaseModel] | None:
    """The vars schema of a worker's entry module (``workers/search.py`` → search's); None for a module of
    the deployment's own, whose vars stay free-form."""
    if not isinstance(main, str):
        return None
    return worker_vars.SCHEMAS.get(Path(main).stem) if Path(main).parent.name == "workers" else None


def _problem(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    key, message = _describe(exc.errors()[0])
    extra = len(exc.errors()) - 1
    if extra:
        message += f" (and {extra} more problem{'s' if extra > 1 else ''})"
    return prefix + key, message


def parse(data: dict, *, path: Path, environ: dict[str, str] | None = None) -> Config:
    data = apply_env(inherit_vars(data, path=path), dict(os.environ if environ is None else environ))
    try:
        config = Config.model_validate({**data, "path": path})
    except ValidationError as exc:
        key, message = _problem(exc)
        raise ConfigError(message, file=str(path), key=key) from None
    for name, worker in config.workers.items():
        schema = _vars_schema(worker.main)
        if schema is None:
            continue
        try:
            config.checked_vars[name] = schema.model_validate(worker.vars)
        except ValidationError as exc:
            key, message = _problem(exc, f"workers.{name}.vars.")
            raise ConfigError(message, file=str(path), key=key) from None
    return config


def load(path: str | Path = "wrangler.toml", *, environ: dict[str, str] | None = None) -> Config:
    """Read and check ``wrangler.toml``; any problem raises ConfigError naming the key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found (run from the project root or pass --config)", file=str(path)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(path)) from None
    return parse(data, path=path, environ=environ)


def find_config(start: Path | None = None) -> Path:
    """wrangler.toml in the working directory or the nearest parent, like wrangler itself."""
    if env := os.environ.get("EDGEINDEX_CONFIG"):
        return Path(env)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "wrangler.toml"
        if candidate.exists():
            return candidate
    return here / "wrangler.toml"
