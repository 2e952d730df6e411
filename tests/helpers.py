"""What tests of every kind share: paths, the stack's config, a raw HTTP client, tenants and
documents over the upload worker's HTTP API, bounded polling, and the ingest tests' texts.
Fixtures live in each kind's conftest; nothing here starts anything by itself."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import uuid
from pathlib import Path

import psycopg
from edgeindex import config as config_module
from edgeindex.bindings.database import Database
from edgeindex.runtime.dev import DevStack, free_port
from edgeindex.testing.worker import WorkerHooks
from edgeindex_client import Client as SDKClient
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def make_config(state_dir: Path, **extra_env: str) -> config_module.Config:
    environ = {"EDGEINDEX_STATE_DIR": str(state_dir), **extra_env}
    for name in ("upload", "ingest", "search", "mcp"):
        environ.setdefault(f"EDGEINDEX_{name.upper()}_PORT", str(free_port()))
    return config_module.load(ROOT / "wrangler.toml", environ=environ)


class Client:
    """``(status, body)`` over HTTP for tests, through the SDK's raw ``request`` (the one HTTP client of the
    project): no error raised for a 4xx/5xx and no retry, so tests see exactly what the server answered."""

    def __init__(self, base: str, key: str | None = None) -> None:
        self.base = base
        self.key = key
        # api_key="" (not None): no Authorization unless this tenant has a key, never $EDGEINDEX_API_KEY
        self._http = SDKClient(key or "", base_url=base, timeout=60.0, max_retries=0)

    def request(self, method: str, path: str, body=None, *, headers: dict | None = None, raw: bytes | None = None):
        # header values as bytes: probes send non-ASCII ones, which go out as Latin-1 as browsers send them
        headers = {k: v.encode("latin-1") if isinstance(v, str) else v for k, v in (headers or {}).items()}
        absolute = path.startswith(("http://", "https://"))  # e.g. a complete_url the server handed out
        if absolute and self.key and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = f"Bearer {self.key}".encode()  # the SDK adds it only to its own URLs
        reply = self._http.request(method, path, service=None if absolute else "upload",
                                   json=body if raw is None else None, content=raw, headers=headers)
        payload = reply.body
        if isinstance(payload, bytes):
            try:
                payload = json.loads(payload)
            except (json.JSONDecodeError, UnicodeDecodeError):
                pass  # not JSON: the bytes, for the test to look at
        return reply.status, payload

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


async def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Poll an async or sync predicate until it returns a truthy value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)


# --- tenants and documents over the upload worker's HTTP API ---------------------

_counter = iter(range(1, 1_000_000))


class Tenant:
    """An entity with its own API key, and clients for the upload and search workers."""

    def __init__(self, stack, entity_id: str, key: str) -> None:
        self.entity_id = entity_id
        self.key = key
        self.upload = Client(stack.url("upload"), key)
        self.search = Client(stack.url("search"), key)


def new_tenant(stack, upload_admin: Client, *, kind: str = "user", prefix: str = "t") -> Tenant:
    entity_id = f"{prefix}{next(_counter)}-{os.getpid()}"
    status, body = upload_admin.post("/admin/entities", {"id": entity_id, "kind": kind, "name": entity_id})
    assert status == 201, body
    status, body = upload_admin.post("/admin/keys", {"name": f"key for {entity_id}", "entity_ids": [entity_id]})
    assert status == 201, body
    return Tenant(stack, entity_id, body["key"])


def put_document(tenant: Tenant, document_id: str, body: bytes | str, *, content_type: str = "text/plain",
                 title: str = "", source: str = "", tags: list[str] | None = None,
                 collection: str | None = None) -> dict:
    """Direct upload of a small body; returns the pending document."""
    from urllib.parse import urlencode

    params = {k: v for k, v in {"title": title, "source": source, "tags": ",".join(tags or []),
                                "collection": collection}.items() if v}
    raw = body.encode() if isinstance(body, str) else body
    path = f"/entities/{tenant.entity_id}/documents/{document_id}" + (f"?{urlencode(params)}" if params else "")
    status, doc = tenant.upload.put(path, raw=raw, headers={"Content-Type": content_type})
    assert status == 202, doc
    return doc


async def wait_document(tenant: Tenant, document_id: str, *, version: int | None = None,
                        statuses=("ready", "failed"), timeout: float = 120.0) -> dict:
    """Poll the status route until the document (at least at ``version``) is ready or failed."""
    def check():
        status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/{document_id}")
        if status == 200 and doc["status"] in statuses and (version is None or doc["version"] >= version):
            return doc
        return None

    return await wait_for(lambda: asyncio.to_thread(check), timeout=timeout)


def run_docs_example(page: Path, stack, tenant: Tenant, monkeypatch, capsys) -> str:
    """The page's one Python example, run as written against the stack as ``tenant``: what it printed."""
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 1
    for name, value in {"EDGEINDEX_API_KEY": tenant.key, "EDGEINDEX_SEARCH_URL": stack.url("search"),
                        "EDGEINDEX_UPLOAD_URL": stack.url("upload"), "EDGEINDEX_ENTITY": tenant.entity_id}.items():
        monkeypatch.setenv(name, value)
    exec(compile(blocks[0], str(page), "exec"), {})
    return capsys.readouterr().out


# --- texts of the ingestion tests ---------------------------------------------------

TOPICS = ["rivers", "mountains", "forests", "deserts", "oceans"]


def paragraph(topic: str, sentences: int = 7, *, word: str = "shape") -> str:
    # ~126 model tokens: one paragraph per chunk at CHUNK_TOKENS = 200
    return " ".join(f"The {topic} chapter sentence {j} describes how {topic} {word} the land and the people "
                    f"living near them." for j in range(sentences))


def document(paragraphs: list[str]) -> str:
    return "\n\n".join(paragraphs)


async def generation(db, entity_id: str, document_id: str) -> str:
    """The document's generation (part of its object keys)."""
    row = await db.fetchone("SELECT generation::text FROM documents WHERE entity_id = %s AND id = %s",
                            (entity_id, document_id))
    return row["generation"]


async def chunks(db, entity_id: str, document_id: str) -> list[dict]:
    return await db.fetch("SELECT id::text, position, start_char, end_char, content, version FROM chunks "
                          "WHERE entity_id = %s AND document_id = %s ORDER BY position", (entity_id, document_id))


@contextlib.contextmanager
def running_stack(state: Path, hooks: WorkerHooks | None = None, *, workers: list[str] | None = None,
                  **extra_env: str):
    """A whole stack on free ports under ``state``; its workers' output goes to ``state/workers.log``.
    ``hooks``: hold points and faults of its workers (the test stacks turn on hold points: ``edgeindex.holds``);
    ``workers``: which of them to run (all); ``extra_env`` goes to the configuration and the workers."""
    cfg = make_config(state, **extra_env)
    log_path = state / "workers.log"
    with open(log_path, "w") as log:
        stack = DevStack(cfg, workers=workers, worker_output=log, hooks=hooks,
                         environ={**os.environ, "EDGEINDEX_ADMIN_KEY": "test-admin-key", **extra_env})
        try:
            stack.start()
        except Exception:
            log.flush()
            print(log_path.read_text()[-5000:])
            raise
        stack.log_path = log_path
        try:
            yield stack
        finally:
            stack.stop()


async def new_database(stack, prefix: str) -> str:
    """The DSN of a new, empty database on the stack's Postgres, named ``prefix`` and a random suffix."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(stack.dsn, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(stack.dsn, dbname=name)


@contextlib.asynccontextmanager
async def database_of_its_own(stack, prefix: str, *, model_id: str = "sentence-transformers/all-MiniLM-L6-v2",
                              dimension: int = 384):
    """A new database on the stack's Postgres, migrated, with autovacuum off on every table: for tests
    that assert the planner's choices. On the shared database those move with what other tests left
    in a table and with when autovacuum last analysed or vacuumed it; here they follow only from the
    test's own rows and its own ANALYZE."""
    database = Database(await new_database(stack, prefix), max_size=4)
    await database.migrate(ROOT / "infra" / "migrations", model_id=model_id, dimension=dimension)
    await database.open()
    try:
        tables = await database.fetch("SELECT oid::regclass::text AS t FROM pg_class "
                                      "WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")
        assert {"chunks_p7", "vector_index"} <= {row["t"] for row in tables}
        for row in tables:  # the leaves: a partitioned parent has no storage to vacuum
            await database.execute(f"ALTER TABLE {row['t']} SET (autovacuum_enabled = false)")
        yield database
    finally:
        await database.close()


def logged_around(stack, needles: list[str], *, lines: int = 40) -> str:
    """The workers' log lines following each needle (a request id): what a failed assertion on a
    server error should show, since the stack's log goes with its temporary folder."""
    logged = stack.log_path.read_text(errors="replace").splitlines()
    found = [i for i, line in enumerate(logged) if any(n in line for n in needles)]
    return "\n".join("\n".join(logged[i:i + lines]) for i in found) or f"(none of {needles} in the log)"


def make_pdf(pages: list[list[str]], *, title: str | None = None) -> bytes:
    """A small valid PDF with real text objects (one list of lines per page)."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % i for i in page_ids)
                   + b"] /Count %d >>" % len(pages))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        shown = (line.replace("(", r"\(").replace(")", r"\)").encode("latin-1") for line in lines)
        content = b"BT /F1 12 Tf 14 TL 72 720 Td " + b" ".join(b"(" + t + b") Tj T*" for t in shown) + b" ET"
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 3 0 R >> >> >>" % (page_ids[i] + 1))
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    info_id = None
    if title:
        objects.append(b"<< /Title (" + title.encode("latin-1") + b") >>")
        info_id = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    info = b" /Info %d 0 R" % info_id if info_id else b""
    trailer = b"<< /Size %d /Root 1 0 R" % (len(objects) + 1) + info + b" >>"
    out += b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


# Query texts of the packed and 8-bit query graph tests (bindings/packed_query.py, query_weights.py): short and
# long, one character, accents and CJK, an id; the sixth is past the model's 256 tokens, so it runs alone.
QUERY_TEXTS = [
    "what is theraderm used for",
    "rotate the oncall schedule",
    "x",
    "Übergrößenträger — naïve café ☕ 東京 résumé",
    "how many calories are in a cup of cooked quinoa compared with brown rice",
    "long " * 400,
    "define photosynthesis",
    "ZX-4471-QK certificate rotation failed",
]
