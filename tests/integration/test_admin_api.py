"""The admin page's routes over HTTP: a static page with a strict content policy, the overview, the
search playground going through the upload worker with the caller's key, the telemetry hook, and
the retry of a failed document."""

from __future__ import annotations

import importlib.util
import urllib.request

from ..helpers import Client, new_tenant, put_document, wait_document


def _router_reports() -> bool:
    """Whether the router's report (another package, edgeindex.routing.report) is installed."""
    try:
        return importlib.util.find_spec("edgeindex.routing.report") is not None
    except ModuleNotFoundError:
        return False

PASSAGE = "The glassblower anneals every vase overnight so the glass does not crack as it cools."


def _raw(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_page_is_static_and_locked_down(stack):
    status, headers, body = _raw(stack.url("upload") + "/admin")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cache-Control"] == "no-store"
    assert "Access-Control-Allow-Origin" not in headers  # no CORS: the page talks to its own origin only
    assert b"<script>" not in body  # no inline script: the policy forbids it
    status, headers, js = _raw(stack.url("upload") + "/admin/assets/admin.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"textContent" in js
    assert b"innerHTML" not in js  # user data is only ever set as text
    status, _, _ = _raw(stack.url("upload") + "/admin/assets/..%2Fservice.py")
    assert status == 404


def test_overview_counts_documents_and_keys_per_tenant_admin_only(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="ov")
    put_document(tenant, "one", PASSAGE)
    status, overview = upload_admin.get("/admin/api/overview")
    assert status == 200
    mine = next(e for e in overview["entities"] if e["id"] == tenant.entity_id)
    assert mine["keys"] == 1
    assert sum(mine["documents"].values()) == 1
    status, body = tenant.upload.get("/admin/api/overview")
    assert status == 403 and body["field"] == "Authorization"
    status, body = Client(stack.url("upload")).get("/admin/api/overview")
    assert status == 401


async def test_playground_search_goes_to_the_search_worker_with_the_callers_key(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="pg")
    put_document(tenant, "glass", PASSAGE)
    await wait_document(tenant, "glass", statuses=("ready",))
    request = {"query": "why is the vase annealed", "entity_ids": [tenant.entity_id], "k": 3, "cache": False}
    status, through = upload_admin.post("/admin/api/search", request)
    assert status == 200, through
    status, direct = Client(stack.url("search"), stack.admin_key).post("/search", request)
    assert status == 200
    assert [r["chunk_id"] for r in through["results"]] == [r["chunk_id"] for r in direct["results"]]
    assert through["results"][0]["document_id"] == "glass" and through["timings"]
    # the search worker's own validation answers, field named
    status, body = upload_admin.post("/admin/api/search", {"query": "x", "entity_ids": [tenant.entity_id], "k": 0})
    assert status == 400 and body["field"] == "k"
    # the playground is the admin's: a tenant key is refused before anything is forwarded
    status, body = tenant.upload.post("/admin/api/search", request)
    assert status == 403 and body["field"] == "Authorization"


def test_telemetry_is_an_empty_state_until_the_router_reports(upload_admin):
    status, body = upload_admin.get("/admin/api/telemetry")
    if not _router_reports():
        assert status == 404 and body["error"] == "not_found" and "no telemetry yet" in body["message"]
    else:
        assert status in (200, 404), body


async def test_retry_ingests_a_failed_documents_bytes_again_as_its_next_version(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="rt")
    put_document(tenant, "broken.pdf", b"%PDF-1.4 nothing readable", content_type="application/pdf")
    failed = await wait_document(tenant, "broken.pdf")
    assert failed["status"] == "failed" and failed["error"], failed
    path = f"/entities/{tenant.entity_id}/documents/broken.pdf"
    status, retried = tenant.upload.post(path + "/retry")
    assert status == 202 and retried["version"] == 2 and retried["status"] == "pending", retried
    again = await wait_document(tenant, "broken.pdf", version=2)
    # ingested again (the same bytes fail the same way): a new run, not the old answer
    assert again["version"] == 2 and again["status"] == "failed" and again["error"] == failed["error"]

    put_document(tenant, "fine", PASSAGE)
    await wait_document(tenant, "fine", statuses=("ready",))
    status, body = tenant.upload.post(f"/entities/{tenant.entity_id}/documents/fine/retry")
    assert status == 409 and body["field"] == "document_id" and "ready" in body["message"]
    status, body = tenant.upload.post(f"/entities/{tenant.entity_id}/documents/nope/retry")
    assert status == 404 and body["field"] == "document_id"
    other = new_tenant(stack, upload_admin, prefix="rt")
    status, body = other.upload.post(path + "/retry")
    assert status == 403 and body["field"] == "entity_id"
