"""Every worker serves an OpenAPI 3.1 document of all its routes, and docs that need no network."""

from __future__ import annotations

import importlib
import json
import urllib.request

import jsonschema
import pytest
from openapi_spec_validator import validate

from ..helpers import new_tenant, put_document, wait_document

WORKERS = ["upload", "ingest", "search", "mcp"]


def fetch(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read()


def spec_of(stack, worker: str) -> dict:
    status, kind, body = fetch(stack.url(worker) + "/openapi.json")
    assert status == 200 and kind.startswith("application/json")
    return json.loads(body)


def fetch_as(url: str, host: str) -> bytes:
    request = urllib.request.Request(url, headers={"Host": host})
    with urllib.request.urlopen(request, timeout=30) as resp:
        return resp.read()


@pytest.mark.parametrize("worker", WORKERS)
def test_a_client_host_header_never_reaches_the_spec(stack, worker):
    # the hostile request comes first: a spec built from the first request's Host would keep it
    hostile = fetch_as(stack.url(worker) + "/openapi.json", "evil.example:666")
    served = [hostile, fetch(stack.url(worker) + "/openapi.json")[2],
              fetch_as(stack.url(worker) + "/docs", "evil.example:666")]
    for body in served:
        assert b"evil.example" not in body
    for body in served[:2]:
        assert json.loads(body)["servers"] == [{"url": "/"}]


@pytest.mark.parametrize("worker", WORKERS)
def test_spec_is_valid_and_lists_every_route(stack, worker):
    spec = spec_of(stack, worker)
    validate(spec)  # raises on an invalid document
    assert spec["openapi"] == "3.1.0" and spec["servers"] == [{"url": "/"}]   # relative: never a client's Host
    routes = importlib.import_module(f"edgeindex.workers.{worker}").routes
    assert routes.routes, "a worker without routes would make this test vacuous"
    documented = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    expected = {(r.method, r.path) for r in routes.routes} | {("GET", "/health"), ("GET", "/openapi.json"),
                                                               ("GET", "/docs")}
    assert documented == expected
    for route in routes.routes:
        op = spec["paths"][route.path][route.method.lower()]
        assert op["summary"] == route.summary
        if route.request is not None:
            assert "$ref" in op["requestBody"]["content"]["application/json"]["schema"]
        assert str(route.status) in op["responses"]
    # /health names the same routes the spec documents
    health = json.loads(fetch(stack.url(worker) + "/health")[2])
    assert len(health["routes"]) == len(routes.routes)


def test_docs_page_and_assets_are_served_locally(stack):
    status, kind, page = fetch(stack.url("search") + "/docs")
    text = page.decode()
    assert status == 200 and kind.startswith("text/html")
    assert "http://" not in text and "https://" not in text  # nothing from a CDN
    assert 'src="docs/swagger-ui-bundle.js"' in text and 'url: "openapi.json"' in text
    status, kind, script = fetch(stack.url("search") + "/docs/swagger-ui-bundle.js")
    assert status == 200 and "javascript" in kind and len(script) > 100_000
    with pytest.raises(urllib.error.HTTPError) as err:
        fetch(stack.url("search") + "/docs/..%2Fcore.py")
    assert err.value.code == 404


def response_validator(spec: dict, path: str, method: str, status: int) -> jsonschema.Validator:
    schema = spec["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**schema, "components": spec["components"]})


async def test_real_answers_match_the_documented_schemas(stack, upload_admin):
    upload_spec, search_spec = spec_of(stack, "upload"), spec_of(stack, "search")
    tenant = new_tenant(stack, upload_admin)
    doc_path = "/entities/{entity_id}/documents/{document_id}"
    pending = put_document(tenant, "spec-1", "Harbour pilots board ships at the outer buoy in any weather.",
                           title="Pilots", tags=["harbour"])
    response_validator(upload_spec, doc_path, "put", 202).validate(pending)
    ready = await wait_document(tenant, "spec-1")
    response_validator(upload_spec, doc_path, "get", 200).validate(ready)
    status, listing = tenant.upload.get(f"/entities/{tenant.entity_id}/documents")
    response_validator(upload_spec, "/entities/{entity_id}/documents", "get", 200).validate(listing)
    status, keys = upload_admin.get("/admin/keys")
    response_validator(upload_spec, "/admin/keys", "get", 200).validate(keys)
    status, ticket = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads",
                                        {"content_type": "text/plain", "size_bytes": 10, "multipart": True})
    assert status == 201
    response_validator(upload_spec, "/entities/{entity_id}/uploads", "post", 201).validate(ticket)
    status, found = tenant.search.post("/search", {"query": "where do pilots board", "entity_ids": [tenant.entity_id],
                                                   "include": {"neighbours": 1, "summary": True}})
    assert status == 200 and found["results"]
    response_validator(search_spec, "/search", "post", 200).validate(found)
    status, error = tenant.search.post("/search", {"query": "x", "entity_ids": [tenant.entity_id], "k": 0})
    assert status == 400
    schema = search_spec["paths"]["/search"]["post"]["responses"]["default"]["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator({**schema, "components": search_spec["components"]}).validate(error)
