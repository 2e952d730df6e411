"""A catalogue of bad inputs across every route: each gets its exact status and the field at fault,
as JSON with a request id, and the service is healthy afterwards."""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass
from urllib.parse import quote

import pytest

from ..helpers import Client, new_tenant

T = "{tenant}"    # replaced by the test's tenant
O = "{other}"     # another tenant, not granted to the test's key
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Case:
    name: str
    worker: str
    method: str
    path: str
    status: int
    field: str | None
    body: object = None            # JSON-encoded unless bytes
    headers: dict | None = None
    key: str = "tenant"            # tenant | admin | none | revoked | bogus | other


def _deep(n: int) -> object:
    value: object = 1
    for _ in range(n):
        value = {"a": value}
    return value


CASES = [
    # --- authentication and authorisation, every worker -----------------------------------
    Case("no key", "search", "POST", "/search", 401, "Authorization", {"query": "x"}, key="none"),
    Case("bogus key", "search", "POST", "/search", 401, "Authorization", {"query": "x"}, key="bogus"),
    Case("revoked key", "search", "POST", "/search", 401, "Authorization", {"query": "x"}, key="revoked"),
    Case("non-ascii key", "search", "POST", "/search", 401, "X-API-Key", {"query": "x"},
         headers={"X-API-Key": "kl\u00fcssel"}, key="none"),
    Case("huge key", "search", "POST", "/search", 401, "Authorization", {"query": "x"},
         headers={"Authorization": "Bearer " + "k" * 5000}, key="none"),
    Case("foreign entity", "search", "POST", "/search", 403, "entity_ids", {"query": "x", "entity_ids": [O]}),
    Case("admin route, tenant key: entities", "upload", "POST", "/admin/entities", 403, "Authorization",
         {"id": "x-cat", "kind": "user"}),
    Case("admin route, tenant key: keys", "upload", "GET", "/admin/keys", 403, "Authorization"),
    Case("admin route, tenant key: list entities", "upload", "GET", "/admin/entities", 403, "Authorization"),
    Case("admin route, tenant key: revoke", "upload", "DELETE", "/admin/keys/key_x", 403, "Authorization"),
    Case("admin route, tenant key: models", "upload", "GET", "/admin/api/models", 403, "Authorization"),
    Case("admin route, tenant key: model job", "upload", "POST", "/admin/api/models/jobs", 403, "Authorization",
         {"action": "rollback"}),
    Case("model job: unknown action", "upload", "POST", "/admin/api/models/jobs", 400, "action",
         {"action": "explode", "model": "multilingual-e5-small"}, key="admin"),
    Case("model job: duty a string", "upload", "POST", "/admin/api/models/jobs", 400, "duty",
         {"action": "backfill", "model": "multilingual-e5-small", "duty": "0.5"}, key="admin"),
    Case("model job: unknown field", "upload", "POST", "/admin/api/models/jobs", 400, "to",
         {"action": "backfill", "to": "multilingual-e5-small"}, key="admin"),
    Case("model job stop: not a number", "upload", "POST", "/admin/api/models/jobs/x1/stop", 400, "id", key="admin"),
    Case("admin route, tenant key: model job stop", "upload", "POST", "/admin/api/models/jobs/1/stop", 403,
         "Authorization"),
    Case("model drop: no model", "upload", "POST", "/admin/api/models/drop", 400, "model", {}, key="admin"),
    Case("model drop: the serving model", "upload", "POST", "/admin/api/models/drop", 409, "model",
         {"model": "all-MiniLM-L6-v2"}, key="admin"),
    Case("admin route, tenant key: runs", "ingest", "GET", "/runs?id=x", 403, "Authorization"),
    Case("foreign entity upload", "upload", "POST", f"/entities/{O}/uploads", 403, "entity_id",
         {"content_type": "text/plain", "size_bytes": 1}),
    Case("foreign entity list", "upload", "GET", f"/entities/{O}/documents", 403, "entity_id"),
    Case("foreign entity put", "upload", "PUT", f"/entities/{O}/documents/d", 403, "entity_id", b"x",
         headers={"Content-Type": "text/plain"}),
    Case("foreign entity delete", "upload", "DELETE", f"/entities/{O}/documents/d", 403, "entity_id"),
    # --- /search body ---------------------------------------------------------------------
    Case("search: not JSON", "search", "POST", "/search", 400, "body", b"{nope", headers=JSON),
    Case("search: JSON array", "search", "POST", "/search", 400, "body", [1, 2]),
    Case("search: empty body", "search", "POST", "/search", 400, "body", b"", headers=JSON),
    Case("search: form content type", "search", "POST", "/search", 415, "Content-Type", b"query=x",
         headers={"Content-Type": "application/x-www-form-urlencoded"}),
    Case("search: missing query", "search", "POST", "/search", 400, "query", {"k": 3}),
    Case("search: query not a string", "search", "POST", "/search", 400, "query", {"query": 5}),
    Case("search: blank query", "search", "POST", "/search", 400, "query", {"query": "   "}),
    Case("search: NUL in query", "search", "POST", "/search", 400, "query", {"query": "a\u0000b"}),
    Case("search: lone surrogate", "search", "POST", "/search", 400, "query", b'{"query": "a\\ud800"}',
         headers=JSON),
    Case("search: k zero", "search", "POST", "/search", 400, "k", {"query": "x", "k": 0}),
    Case("search: k string", "search", "POST", "/search", 400, "k", {"query": "x", "k": "5"}),
    Case("search: k bool", "search", "POST", "/search", 400, "k", {"query": "x", "k": True}),
    Case("search: k over MAX_K", "search", "POST", "/search", 400, "k", {"query": "x", "k": 1000}),
    Case("search: alpha > 1", "search", "POST", "/search", 400, "alpha", {"query": "x", "alpha": 1.5}),
    Case("search: alpha string", "search", "POST", "/search", 400, "alpha", {"query": "x", "alpha": "0.5"}),
    Case("search: unknown fusion", "search", "POST", "/search", 400, "fusion", {"query": "x", "fusion": "max"}),
    Case("search: unknown field", "search", "POST", "/search", 400, "colour", {"query": "x", "colour": 1}),
    Case("search: unknown include", "search", "POST", "/search", 400, "include.vectors",
         {"query": "x", "include": {"vectors": True}}),
    Case("search: neighbours too many", "search", "POST", "/search", 400, "include.neighbours",
         {"query": "x", "include": {"neighbours": 99}}),
    Case("search: empty entity list", "search", "POST", "/search", 400, "entity_ids",
         {"query": "x", "entity_ids": []}),
    Case("search: bad entity id", "search", "POST", "/search", 400, "entity_ids.0",
         {"query": "x", "entity_ids": ["a b"]}),
    Case("search: empty tag filter", "search", "POST", "/search", 400, "filters.tags",
         {"query": "x", "filters": {"tags": []}}),
    Case("search: bad timestamp", "search", "POST", "/search", 400, "filters.created_after",
         {"query": "x", "filters": {"created_after": "yesterday"}}),
    Case("search: timestamp overflow", "search", "POST", "/search", 400, "filters.updated_after",
         {"query": "x", "filters": {"updated_after": "9999-12-31T23:59:59-14:00"}}),
    Case("search: reversed range", "search", "POST", "/search", 400, "filters",
         {"query": "x", "filters": {"created_after": "2026-02-01", "created_before": "2026-01-01"}}),
    Case("search: bad chunk id", "search", "POST", "/search", 400, "filters.exclude_chunk_ids.0",
         {"query": "x", "filters": {"exclude_chunk_ids": ["not-a-uuid"]}}),
    Case("search: control char in document id filter", "search", "POST", "/search", 400,
         "filters.document_ids.0", {"query": "x", "filters": {"document_ids": ["a\u0001"]}}),
    Case("search: nested too deep", "search", "POST", "/search", 400, "filters" + ".a" * 32,
         {"query": "x", "filters": _deep(40)}),
    Case("search: rerank not configured", "search", "POST", "/search", 400, "rerank", {"query": "x", "rerank": True}),
    Case("search: body over the limit", "search", "POST", "/search", 413, "body",
         {"query": "x", "pad": "y" * 300_000}),
    Case("search: empty collections", "search", "POST", "/search", 400, "collections",
         {"query": "x", "collections": []}),
    Case("search: collections not auto", "search", "POST", "/search", 400, "collections",
         {"query": "x", "collections": "all"}),
    Case("search: bad collection name", "search", "POST", "/search", 400, "collections",
         {"query": "x", "collections": ["a b"]}),
    # --- trajectories ------------------------------------------------------------------------
    Case("trajectory: bad id", "search", "POST", "/search", 400, "trajectory",
         {"query": "x", "trajectory": "has space"}),
    Case("trajectory: id not a string", "search", "POST", "/search", 400, "trajectory",
         {"query": "x", "trajectory": 7}),
    Case("trajectory: unknown seen mode", "search", "POST", "/search", 400, "seen",
         {"query": "x", "trajectory": "t-cat", "seen": "hide"}),
    Case("trajectory: seen without a trajectory", "search", "POST", "/search", 400, "seen",
         {"query": "x", "seen": "mark"}),
    Case("trajectory: create with a bad id", "search", "POST", "/trajectories", 400, "id", {"id": "-x"}),
    Case("trajectory: create with an unknown field", "search", "POST", "/trajectories", 400, "ttl", {"ttl": 5}),
    Case("trajectory: create, no key", "search", "POST", "/trajectories", 401, "Authorization", {}, key="none"),
    Case("trajectory: grounding of an unknown one", "search", "GET", "/trajectories/t-none", 404, "trajectory"),
    Case("trajectory: grounding, another key's", "search", "GET", "/trajectories/t-cat-other", 404, "trajectory",
         key="other"),
    Case("trajectory: delete an unknown one", "search", "DELETE", "/trajectories/t-none", 404, "trajectory"),
    Case("trajectory: expand an unknown one", "search", "POST", "/trajectories/t-none/expand", 404, "trajectory",
         {"chunk_id": "00000000-0000-0000-0000-000000000000"}),
    Case("trajectory: expand without a chunk", "search", "POST", "/trajectories/t-none/expand", 400, "chunk_id",
         {"mode": "similar"}),
    Case("trajectory: expand, bad chunk id", "search", "POST", "/trajectories/t-none/expand", 400, "chunk_id",
         {"chunk_id": "not-a-uuid"}),
    Case("trajectory: expand, unknown mode", "search", "POST", "/trajectories/t-none/expand", 400, "mode",
         {"chunk_id": "00000000-0000-0000-0000-000000000000", "mode": "everything"}),
    Case("trajectory: expand, k zero", "search", "POST", "/trajectories/t-none/expand", 400, "k",
         {"chunk_id": "00000000-0000-0000-0000-000000000000", "k": 0}),
    # --- document history ----------------------------------------------------------------------
    Case("as_of: not a time", "search", "POST", "/search", 400, "as_of", {"query": "x", "as_of": "yesterday"}),
    Case("as_of: with neighbours", "search", "POST", "/search", 400, "include.neighbours",
         {"query": "x", "as_of": "2026-01-01T00:00:00Z", "include": {"neighbours": 1}}),
    Case("as_of: with collections auto", "search", "POST", "/search", 400, "collections",
         {"query": "x", "as_of": "2026-01-01T00:00:00Z", "collections": "auto"}),
    Case("changes: no since", "upload", "GET", f"/entities/{T}/documents/nope/changes", 400, "since"),
    Case("changes: since not a version or time", "upload", "GET", f"/entities/{T}/documents/nope/changes?since=last",
         400, "since"),
    Case("changes: until not a version or time", "upload", "GET",
         f"/entities/{T}/documents/nope/changes?since=1&until=soon", 400, "until"),
    Case("changes: unknown document", "upload", "GET", f"/entities/{T}/documents/nope/changes?since=1", 404,
         "document_id"),
    Case("changes: foreign entity", "upload", "GET", f"/entities/{O}/documents/d/changes?since=1", 403,
         "entity_id"),
    Case("versions: unknown document", "upload", "GET", f"/entities/{T}/documents/nope/versions", 404,
         "document_id"),
    Case("history: foreign entity", "upload", "GET", f"/entities/{O}/history", 403, "entity_id"),
    Case("history: set with a tenant key", "upload", "PUT", f"/entities/{T}/history", 403, "Authorization",
         {"versions": 3}),
    Case("history: negative versions", "upload", "PUT", f"/entities/{T}/history", 400, "versions",
         {"versions": -1}, key="admin"),
    Case("history: days not a number", "upload", "PUT", f"/entities/{T}/history", 400, "days",
         {"days": "30"}, key="admin"),
    Case("history: unknown entity", "upload", "PUT", "/entities/nobody-here/history", 404, "entity_id",
         {"versions": 3}, key="admin"),
    # --- tool and index selection, collections ------------------------------------------------
    Case("tools: foreign entity", "search", "POST", f"/entities/{O}/tools", 403, "entity", {"tools": [{"name": "t"}]}),
    Case("tools: unknown shape", "search", "POST", f"/entities/{T}/tools", 400, "functions", {"functions": []}),
    Case("tools: two shapes", "search", "POST", f"/entities/{T}/tools", 400, "body",
         {"tools": [{"name": "a"}], "tool": {"name": "b"}}),
    Case("tools: empty list", "search", "POST", f"/entities/{T}/tools", 400, "tools", {"tools": []}),
    Case("tools: item not an object", "search", "POST", f"/entities/{T}/tools", 400, "tools.0", {"tools": ["x"]}),
    Case("tools: invalid JSON Schema", "search", "POST", f"/entities/{T}/tools", 400, "tools.0.parameters",
         {"tools": [{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}}]}),
    Case("tools: duplicate names", "search", "POST", f"/entities/{T}/tools", 400, "tools.1.name",
         {"tools": [{"name": "t"}, {"name": "t"}]}),
    Case("tools: oversized catalogue", "search", "POST", f"/entities/{T}/tools", 400, "tools",
         {"tools": [{"name": f"t{i}"} for i in range(1001)]}),
    Case("tools: delete unknown", "search", "DELETE", f"/entities/{T}/tools/nope", 404, "name"),
    Case("tools select: missing query", "search", "POST", "/tools/select", 400, "query", {"k": 3}),
    Case("tools select: k string", "search", "POST", "/tools/select", 400, "k", {"query": "x", "k": "3"}),
    Case("tools select: k over 50", "search", "POST", "/tools/select", 400, "k", {"query": "x", "k": 51}),
    Case("tools select: threshold string", "search", "POST", "/tools/select", 400, "threshold",
         {"query": "x", "threshold": "high"}),
    Case("tools select: unknown field", "search", "POST", "/tools/select", 400, "colour", {"query": "x", "colour": 1}),
    Case("tools select: foreign entity", "search", "POST", "/tools/select", 403, "entity_ids",
         {"query": "x", "entity_ids": [O]}),
    Case("tools feedback: used missing", "search", "POST", "/tools/feedback", 400, "used", {"query": "x"}),
    Case("tools feedback: unknown tool", "search", "POST", "/tools/feedback", 400, "used.0",
         {"query": "x", "used": ["nope"]}),
    Case("indices: not a list", "search", "POST", f"/entities/{T}/indices", 400, "indices", {"indices": {"a": 1}}),
    Case("indices: bad name", "search", "POST", f"/entities/{T}/indices", 400, "indices.0.name",
         {"indices": [{"name": "a b"}]}),
    Case("indices: fields not strings", "search", "POST", f"/entities/{T}/indices", 400, "indices.0.fields.0",
         {"indices": [{"name": "a", "fields": [1]}]}),
    Case("indices: duplicate names", "search", "POST", f"/entities/{T}/indices", 400, "indices.1.name",
         {"indices": [{"name": "a"}, {"name": "a"}]}),
    Case("indices: foreign entity", "search", "GET", f"/entities/{O}/indices", 403, "entity"),
    Case("indices: delete unknown", "search", "DELETE", f"/entities/{T}/indices/nope", 404, "name"),
    Case("indices select: blank query", "search", "POST", "/indices/select", 400, "query", {"query": " "}),
    Case("indices select: k zero", "search", "POST", "/indices/select", 400, "k", {"query": "x", "k": 0}),
    Case("indices select: entity ids empty", "search", "POST", "/indices/select", 400, "entity_ids",
         {"query": "x", "entity_ids": []}),
    Case("collections: foreign entity", "search", "GET", f"/entities/{O}/collections", 403, "entity"),
    Case("collections: unknown", "search", "GET", f"/entities/{T}/collections/nope", 404, "name"),
    Case("collections: bad name", "search", "PUT", f"/entities/{T}/collections/a%20b", 400, "name",
         {"description": "x"}),
    Case("collections: description not a string", "search", "PUT", f"/entities/{T}/collections/c", 400,
         "description", {"description": 5}),
    Case("collections: description missing", "search", "PUT", f"/entities/{T}/collections/c", 400,
         "description", {}),
    Case("collections: NUL in description", "search", "PUT", f"/entities/{T}/collections/c", 400,
         "description", {"description": "a\u0000b"}),
    Case("put: bad collection", "upload", "PUT", f"/entities/{T}/documents/c?collection=a%20b", 400, "collection",
         b"x", headers={"Content-Type": "text/plain"}),
    Case("upload: bad collection", "upload", "POST", f"/entities/{T}/uploads", 400, "collection",
         {"content_type": "text/plain", "size_bytes": 10, "collection": "-x"}),
    # --- tenancy admin ----------------------------------------------------------------------
    Case("entity: bad id", "upload", "POST", "/admin/entities", 400, "id", {"id": "a b", "kind": "user"}, key="admin"),
    Case("entity: unknown kind", "upload", "POST", "/admin/entities", 400, "kind", {"id": "k-cat", "kind": "robot"},
         key="admin"),
    Case("entity: NUL in name", "upload", "POST", "/admin/entities", 400, "name",
         {"id": "n-cat", "kind": "user", "name": "a\u0000"}, key="admin"),
    Case("entity: duplicate", "upload", "POST", "/admin/entities", 409, "id", {"id": T, "kind": "user"}, key="admin"),
    Case("key: admin as string", "upload", "POST", "/admin/keys", 400, "admin", {"name": "k", "admin": "true"},
         key="admin"),
    Case("key: admin as number", "upload", "POST", "/admin/keys", 400, "admin", {"name": "k", "admin": 1},
         key="admin"),
    Case("key: unknown entity", "upload", "POST", "/admin/keys", 404, "entity_ids",
         {"name": "k", "entity_ids": ["no-such-entity-x"]}, key="admin"),
    Case("key: empty name", "upload", "POST", "/admin/keys", 400, "name", {"name": " "}, key="admin"),
    Case("key: revoke unknown", "upload", "DELETE", "/admin/keys/key_nope", 404, "key_id", key="admin"),
    # --- uploads ----------------------------------------------------------------------------
    Case("upload: size as string", "upload", "POST", f"/entities/{T}/uploads", 400, "size_bytes",
         {"content_type": "text/plain", "size_bytes": "10"}),
    Case("upload: negative size", "upload", "POST", f"/entities/{T}/uploads", 400, "size_bytes",
         {"content_type": "text/plain", "size_bytes": -1}),
    Case("upload: too large", "upload", "POST", f"/entities/{T}/uploads", 413, "size_bytes",
         {"content_type": "text/plain", "size_bytes": 10**10}),
    Case("upload: unsupported type", "upload", "POST", f"/entities/{T}/uploads", 415, "content_type",
         {"content_type": "image/png", "size_bytes": 10}),
    Case("upload: multipart flag string", "upload", "POST", f"/entities/{T}/uploads", 400, "multipart",
         {"content_type": "text/plain", "size_bytes": 10, "multipart": "yes"}),
    Case("upload: tags not a list", "upload", "POST", f"/entities/{T}/uploads", 400, "tags",
         {"content_type": "text/plain", "size_bytes": 10, "tags": "a"}),
    Case("complete: unknown document", "upload", "POST", f"/entities/{T}/uploads/nope/complete", 404,
         "document_id", {"upload_id": "u", "parts": [{"part_number": 1, "etag": "e"}]}),
    Case("complete: no parts", "upload", "POST", f"/entities/{T}/uploads/nope/complete", 400, "parts",
         {"upload_id": "u", "parts": []}),
    Case("complete: part number 0", "upload", "POST", f"/entities/{T}/uploads/nope/complete", 400,
         "parts.0.part_number", {"upload_id": "u", "parts": [{"part_number": 0, "etag": "e"}]}),
    Case("put: empty body", "upload", "PUT", f"/entities/{T}/documents/empty", 400, "body", b"",
         headers={"Content-Type": "text/plain"}),
    Case("put: no content type", "upload", "PUT", f"/entities/{T}/documents/ct", 415, "Content-Type", b"x"),
    Case("put: latin-1 charset", "upload", "PUT", f"/entities/{T}/documents/cs", 415, "Content-Type", b"x",
         headers={"Content-Type": "text/plain; charset=latin-1"}),
    Case("put: control char in id", "upload", "PUT", f"/entities/{T}/documents/{quote(chr(1))}", 400,
         "document_id", b"x", headers={"Content-Type": "text/plain"}),
    Case("put: NUL in id", "upload", "PUT", f"/entities/{T}/documents/a%00b", 400, "document_id", b"x",
         headers={"Content-Type": "text/plain"}),
    Case("put: id over 512 bytes", "upload", "PUT", f"/entities/{T}/documents/{'d' * 600}", 400, "document_id",
         b"x", headers={"Content-Type": "text/plain"}),
    Case("put: invalid UTF-8 in id", "upload", "PUT", f"/entities/{T}/documents/%FF%FE", 400, "document_id",
         b"x", headers={"Content-Type": "text/plain"}),
    Case("put: NUL in title", "upload", "PUT", f"/entities/{T}/documents/t?title=a%00b", 400, "title", b"x",
         headers={"Content-Type": "text/plain"}),
    Case("put: skip_unchanged not a bool", "upload", "PUT", f"/entities/{T}/documents/s?skip_unchanged=maybe",
         400, "skip_unchanged", b"x", headers={"Content-Type": "text/plain"}),
    Case("bulk: JSON instead of NDJSON", "upload", "POST", f"/entities/{T}/documents", 415, "Content-Type",
         b'{"document_id": "a", "text": "x"}', headers={"Content-Type": "application/json"}),
    Case("bulk: no lines", "upload", "POST", f"/entities/{T}/documents", 400, "body", b"\n\n",
         headers={"Content-Type": "application/x-ndjson"}),
    Case("bulk: foreign entity", "upload", "POST", f"/entities/{O}/documents", 403, "entity_id",
         b'{"document_id": "a", "text": "x"}\n', headers={"Content-Type": "application/x-ndjson"}),
    Case("put: unknown query field", "upload", "PUT", f"/entities/{T}/documents/q?colour=red", 400, "colour",
         b"x", headers={"Content-Type": "text/plain"}),
    Case("status: unknown document", "upload", "GET", f"/entities/{T}/documents/nope", 404, "document_id"),
    Case("list: bad status", "upload", "GET", f"/entities/{T}/documents?status=gone", 400, "status"),
    Case("list: limit zero", "upload", "GET", f"/entities/{T}/documents?limit=0", 400, "limit"),
    Case("delete: unknown document", "upload", "DELETE", f"/entities/{T}/documents/nope", 404, "document_id"),
    Case("upload url: forged", "upload", "PUT", "/uploads/e30.AAAA", 403, "signature", b"x",
         headers={"Content-Type": "text/plain"}, key="none"),
    Case("upload url: garbage", "upload", "PUT", "/uploads/%%%", 403, "signature", b"x", key="none"),
    # --- the admin page's routes (upload worker) ---------------------------------------------
    Case("admin route, tenant key: overview", "upload", "GET", "/admin/api/overview", 403, "Authorization"),
    Case("admin route, tenant key: playground", "upload", "POST", "/admin/api/search", 403, "Authorization",
         {"query": "x", "entity_ids": [T]}),
    Case("admin route, tenant key: telemetry", "upload", "GET", "/admin/api/telemetry", 403, "Authorization"),
    Case("admin route, no key: overview", "upload", "GET", "/admin/api/overview", 401, "Authorization", key="none"),
    Case("playground: k zero", "upload", "POST", "/admin/api/search", 400, "k", {"query": "x", "entity_ids": [T],
         "k": 0}, key="admin"),
    Case("playground: not JSON", "upload", "POST", "/admin/api/search", 400, "body", b"{nope", headers=JSON,
         key="admin"),
    Case("admin asset: unknown", "upload", "GET", "/admin/assets/..%2Fservice.py", 404, "name", key="none"),
    Case("foreign entity retry", "upload", "POST", f"/entities/{O}/documents/d/retry", 403, "entity_id"),
    Case("retry: unknown document", "upload", "POST", f"/entities/{T}/documents/nope/retry", 404, "document_id"),
    Case("runs: missing id", "ingest", "GET", "/runs", 400, "id", key="admin"),
    Case("runs: unknown id", "ingest", "GET", "/runs?id=nope", 404, "id", key="admin"),
    Case("outcomes: tenant key", "ingest", "GET", f"/outcomes?entity_id={T}&document_id=d", 403, "Authorization"),
    Case("outcomes: missing document", "ingest", "GET", f"/outcomes?entity_id={T}", 400, "document_id", key="admin"),
    Case("batcher: tenant key", "ingest", "GET", "/batcher", 403, "Authorization"),
    Case("batcher: no key", "ingest", "GET", "/batcher", 401, "Authorization", key="none"),
    Case("reconciler: tenant key", "ingest", "GET", "/reconciler", 403, "Authorization"),
    Case("reconciler: no key", "ingest", "GET", "/reconciler", 401, "Authorization", key="none"),
    # --- router feedback ----------------------------------------------------------------------
    Case("feedback: missing search id", "search", "POST", "/feedback", 400, "search_id",
         {"useful": ["00000000-0000-0000-0000-000000000001"]}),
    Case("feedback: search id not a uuid", "search", "POST", "/feedback", 400, "search_id",
         {"search_id": "nope", "useful": ["00000000-0000-0000-0000-000000000001"]}),
    Case("feedback: chunk id not a uuid", "search", "POST", "/feedback", 400, "useful.0",
         {"search_id": "00000000-0000-0000-0000-000000000001", "useful": ["nope"]}),
    Case("feedback: unknown search", "search", "POST", "/feedback", 404, "search_id",
         {"search_id": "00000000-0000-0000-0000-000000000001", "useful": ["00000000-0000-0000-0000-000000000002"]}),
    # --- tool and index selection: what the cases above leave out ----------------------------
    Case("tools: foreign entity list", "search", "GET", f"/entities/{O}/tools", 403, "entity"),
    Case("tools: foreign entity delete", "search", "DELETE", f"/entities/{O}/tools/t", 403, "entity"),
    Case("tools: unknown parameter type", "search", "POST", f"/entities/{T}/tools", 400,
         "tools.0.parameters.0.type", {"tools": [{"name": "x", "parameters": [{"name": "a", "type": "quaternion"}]}]}),
    Case("tools: feedback with an empty entity list", "search", "POST", "/tools/feedback", 400, "entity_ids",
         {"query": "x", "entity_ids": [], "used": ["t"]}),
    Case("tools: feedback foreign entity", "search", "POST", "/tools/feedback", 403, "entity_ids",
         {"query": "x", "entity_ids": [O], "used": ["t"]}),
    Case("indices: fields not a list", "search", "POST", f"/entities/{T}/indices", 400, "indices.0.fields",
         {"indices": [{"name": "x", "fields": "title"}]}),
    Case("indices: select foreign entity", "search", "POST", "/indices/select", 403, "entity_ids",
         {"query": "x", "entity_ids": [O]}),
    Case("tools: $schema a list", "search", "POST", f"/entities/{T}/tools", 400, "tools.0.parameters.$schema",
         {"tools": [{"name": "x", "parameters": {"type": "object", "$schema": ["x"]}}]}),
    Case("tools: $schema a number", "search", "POST", f"/entities/{T}/tools", 400, "tools.0.parameters.$schema",
         {"tools": [{"name": "x", "parameters": {"type": "object", "$schema": 5}}]}),
    Case("tools: $schema an object", "search", "POST", f"/entities/{T}/tools", 400, "tools.0.parameters.$schema",
         {"tools": [{"name": "x", "parameters": {"type": "object", "$schema": {}}}]}),
    # --- an admin key writing for an entity that does not exist ------------------------------
    Case("tools: admin key, missing entity", "search", "POST", "/entities/no-such-entity-x/tools", 404, "entity",
         {"tools": [{"name": "x"}]}, key="admin"),
    Case("indices: admin key, missing entity", "search", "POST", "/entities/no-such-entity-x/indices", 404,
         "entity", {"indices": [{"name": "x", "description": "d", "fields": ["a"]}]}, key="admin"),
    Case("collections: admin key, missing entity", "search", "PUT", "/entities/no-such-entity-x/collections/c",
         404, "entity", {"description": "d"}, key="admin"),
]


@pytest.fixture(scope="module")
def parties(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="cat")
    other = new_tenant(stack, upload_admin, prefix="cat")
    status, revoked = upload_admin.post("/admin/keys", {"name": "to revoke", "entity_ids": [tenant.entity_id]})
    assert status == 201
    assert upload_admin.delete(f"/admin/keys/{revoked['id']}")[0] == 200
    assert Client(stack.url("search"), tenant.key).post("/trajectories", {"id": "t-cat-other"})[0] == 201
    return {"tenant": tenant.key, "admin": stack.admin_key, "none": None, "revoked": revoked["key"],
            "bogus": "ei_not-a-key", "other": other.key, "ids": (tenant.entity_id, other.entity_id)}


def test_the_catalogue_is_big_enough():
    assert len(CASES) >= 60 and len({c.name for c in CASES}) == len(CASES)
    assert {c.worker for c in CASES} == {"upload", "ingest", "search"}


def _route_pattern(template: str) -> re.Pattern:
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/?]+", re.escape(template)) + "(\\?.*)?$")


@pytest.mark.parametrize("worker", ["upload", "ingest", "search"])
def test_every_route_has_a_bad_input_in_the_catalogue(stack, worker):
    """A new route must bring its bad inputs here: the catalogue covers every route of every worker's
    spec (the MCP worker's one JSON-RPC route has its own refusal tests; health and docs take no input)."""
    with urllib.request.urlopen(stack.url(worker) + "/openapi.json", timeout=30) as resp:
        spec = json.loads(resp.read())
    routes = [(method.upper(), path) for path, item in spec["paths"].items() for method in item
              if path not in ("/health", "/openapi.json", "/docs", "/admin")]  # no input: status and pages
    assert routes
    cases = [(c.method, c.path) for c in CASES if c.worker == worker]
    missing = [f"{m} {p}" for m, p in routes if not any(cm == m and _route_pattern(p).match(cp) for cm, cp in cases)]
    assert missing == [], f"routes with no bad input in the catalogue: {missing}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_its_exact_status_and_field(stack, parties, case):
    tenant_id, other_id = parties["ids"]
    path = case.path.replace(T, tenant_id).replace(O, other_id)
    body = case.body
    if isinstance(body, (dict, list)):
        body = json.loads(json.dumps(body).replace(T, tenant_id).replace(O, other_id))
    client = Client(stack.url(case.worker), parties[case.key])
    raw = body if isinstance(body, bytes) else None
    status, answer = client.request(case.method, path, None if raw is not None else body, raw=raw,
                                    headers=case.headers)
    assert isinstance(answer, dict), answer
    assert (status, answer.get("field")) == (case.status, case.field), answer
    assert answer["request_id"].startswith("req_")


def test_the_service_is_healthy_after_the_catalogue(stack):
    for name in stack.config.workers:  # every worker the stack runs
        with urllib.request.urlopen(stack.url(name) + "/health", timeout=30) as resp:
            assert json.loads(resp.read())["status"] == "ok"


# --- bulk lines: each bad one fails alone, naming its field; the good ones are stored --------------

BULK_LINES = [
    ("NUL in document_id", b'{"document_id": "a\\u0000b", "text": "x"}', "document_id"),
    ("lone surrogate in document_id", b'{"document_id": "a\\ud800b", "text": "x"}', "document_id"),
    ("lone surrogate in text", b'{"document_id": "s", "text": "a\\udfffb"}', "text"),
    ("a line of 100,000 [", b"[" * 100_000, "body"),
    ("document_id nested 40 deep", b'{"document_id": ' + b"[" * 40 + b'"x"' + b"]" * 40 + b', "text": "x"}',
     "document_id." + ".".join(["0"] * 32)),
    ("not UTF-8", b"\xff\xfe", "body"),
]


@pytest.mark.parametrize("line, field", [(line, field) for _, line, field in BULK_LINES],
                         ids=[name for name, _, _ in BULK_LINES])
def test_a_bad_bulk_line_fails_alone_naming_its_field(stack, parties, line, field):
    tenant_id, _ = parties["ids"]
    body = b'{"document_id": "good-before", "text": "kept"}\n' + line + b'\n{"document_id": "good-after", "text": "kept"}\n'
    client = Client(stack.url("upload"), parties["tenant"])
    status, answer = client.post(f"/entities/{tenant_id}/documents", raw=body,
                                 headers={"Content-Type": "application/x-ndjson"})
    assert status == 200, answer
    assert [r["outcome"] for r in answer["results"]] in (["accepted", "failed", "accepted"],
                                                         ["unchanged", "failed", "unchanged"]), answer
    bad = answer["results"][1]
    assert (bad["status"], bad["error"]["field"]) == (400, field), bad


# --- MCP: the same refusals through the official SDK client, and what arrives before it --------

MCP_TOOL_CASES = [
    ("search: NUL in query", "search", {"query": "a\u0000b"}, "query"),
    ("select_tools: NUL in query", "select_tools", {"query": "a\u0000b"}, "query"),
    ("search: NUL in a filter", "search", {"query": "x", "filters": {"sources": ["a\u0000"]}}, "filters.sources.0"),
    ("search: k zero", "search", {"query": "x", "k": 0}, "k"),
]


@pytest.mark.parametrize("tool, arguments, field", [c[1:] for c in MCP_TOOL_CASES], ids=[c[0] for c in MCP_TOOL_CASES])
async def test_mcp_tool_bad_input_names_its_field(stack, parties, tool, arguments, field):
    from .test_mcp import call, http_session  # noqa: PLC0415 (the MCP tests' SDK session)

    async with http_session(stack, parties["tenant"]) as session:
        error, body = await call(session, tool, arguments)
    assert error and body["field"] == field, body


MCP_RAW_CASES = [
    ("lone surrogate in a query", b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", '
     b'"arguments": {"query": "a\\ud800b"}}}', {}, "tenant", 200, "query"),
    ("id an object", b'{"jsonrpc": "2.0", "id": {}, "method": "tools/list"}', {}, "tenant", 400, "id"),
    ("10 kB key", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {"Authorization": "Bearer " + "k" * 10_000},
     "none", 401, "Authorization"),
    ("Host with a bad port", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {"Host": "localhost:abc"},
     "tenant", 400, "Host"),
]


@pytest.mark.parametrize("content, headers, key, status, field", [c[1:] for c in MCP_RAW_CASES],
                         ids=[c[0] for c in MCP_RAW_CASES])
async def test_mcp_bad_request_names_its_field(stack, parties, content, headers, key, status, field):
    from .test_mcp import raw_mcp  # noqa: PLC0415

    reply = await raw_mcp(stack, content, key=parties[key], headers=headers)
    assert reply.status_code == status, reply.text
    answer = reply.json()
    if "result" in answer:       # a tool's refusal: a result the agent reads
        assert answer["result"]["isError"], answer
        named = json.loads(answer["result"]["content"][0]["text"])["field"]
    elif "error" in answer and isinstance(answer["error"], dict):   # JSON-RPC's own error
        named = answer["error"]["data"]["field"]
    else:                        # refused before JSON-RPC, as every worker refuses
        named = answer["field"]
    assert named == field, answer
    assert reply.headers.get("X-Request-Id", "").startswith("req_")
