"""The admin page in a real headless browser (Debian's chromium through chromium-driver, selenium),
against the shared stack: sign in, tenants and keys, upload, watch ingestion, retry, search, telemetry;
a wrong key refused; user data rendered as text. Each screen is saved as a PNG under the test's
temporary folder (scripts/screenshots.py makes docs/screenshots/)."""

from __future__ import annotations

import importlib.util
import os

import pytest
from edgeindex.admin.browser import AdminPage, BrowserMissing, chromium, find_browser

from ..helpers import Client, new_tenant, put_document, wait_document


def _router_reports() -> bool:
    """Whether the router's report (another package, edgeindex.routing.report) is installed."""
    try:
        return importlib.util.find_spec("edgeindex.routing.report") is not None
    except ModuleNotFoundError:
        return False

PASSAGE = ("The lighthouse keeper logs the fog signal every night at the harbour of Port Quillan, "
           "and the logbook is archived by the maritime museum each winter.")


@pytest.fixture(scope="module")
def browser():
    try:
        find_browser()
    except BrowserMissing as exc:
        pytest.fail(str(exc))  # not a skip: CI must run these, and install.sh installs them
    with chromium() as session:
        yield session


@pytest.fixture
def page(browser, stack):
    browser.delete_all_cookies()
    admin = AdminPage(browser, stack.url("upload"))
    admin.open()
    browser.execute_script("sessionStorage.clear()")
    yield admin
    browser.execute_script("sessionStorage.clear()")


def _unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{os.urandom(3).hex()}"


def test_wrong_admin_key_is_refused(page, stack, upload_admin):
    page.sign_in("ei_not-a-key-of-this-deployment")
    assert "401" in page.sign_in_error()
    assert not page.find("#app").is_displayed()
    assert page.browser.execute_script("return sessionStorage.length") == 0

    tenant_key = new_tenant(stack, upload_admin, prefix="adm").key  # a valid key, but not an admin one
    page.sign_in(tenant_key)
    assert "403" in page.sign_in_error()
    assert not page.find("#app").is_displayed()
    assert page.browser.execute_script("return sessionStorage.length") == 0


def test_operator_flow_sign_in_tenant_key_upload_ready_search(page, stack, tmp_path):
    shots = tmp_path / "screens"
    entity = _unique("lighthouse")
    page.sign_in(stack.admin_key)
    page.signed_in()
    # the key never appears in the URL
    assert stack.admin_key not in page.browser.current_url

    page.create_tenant(entity, kind="group", name="Harbour archive")
    secret = page.create_key(f"agent for {entity}", [entity])
    status, _ = Client(stack.url("upload"), secret).get(f"/entities/{entity}/documents")
    assert status == 200  # the key the page made works, for its entity
    page.screenshot(shots / "tenants.png")

    result = page.upload_text(entity, "logbook.txt", PASSAGE, title="Fog signal logbook")
    assert "version 1" in result
    page.screenshot(shots / "upload.png")

    page.documents(entity)
    ready = page.wait_document("logbook.txt", "ready")
    assert ready["title"] == "Fog signal logbook" and ready["error"] == ""
    page.screenshot(shots / "documents.png")

    results = page.search("who keeps the fog signal log", entity_ids=[entity])
    assert results and results[0]["document_id"] == "logbook.txt"
    assert results[0]["entity_id"] == entity and "lighthouse keeper" in results[0]["chunk"]
    assert float(results[0]["vector"]) > 0 and float(results[0]["text"]) > 0
    assert page.find_all("#search-timings tbody tr th")  # a miss reports its timings
    page.screenshot(shots / "search.png")

    # a misspelled word is corrected against the tenant's vocabulary, and the page says so
    page.search("lighthuose keeper", entity_ids=[entity])
    status, direct = Client(stack.url("search"), stack.admin_key).post(
        "/search", {"query": "lighthuose keeper", "entity_ids": [entity]})
    assert status == 200 and direct["corrections"], direct
    # shown as the words a person reads (the query's word → the word the results hold), not as stems
    assert page.text_of("#search-corrections") == "lighthuose → lighthouse"

    text = page.telemetry()
    if not _router_reports():
        assert "No telemetry yet" in text
    page.screenshot(shots / "telemetry.png")
    assert sorted(p.name for p in shots.iterdir()) == ["documents.png", "search.png", "telemetry.png",
                                                       "tenants.png", "upload.png"]


def test_failed_document_shows_its_reason_and_retry_makes_a_new_version(page, stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="adr")
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.upload_text(tenant.entity_id, "broken.pdf", "this is not a PDF at all", content_type="application/pdf")
    page.documents(tenant.entity_id)
    failed = page.wait_document("broken.pdf", "failed", version="1")
    assert failed["error"]  # the reason is shown
    page.retry("broken.pdf")
    again = page.wait_document("broken.pdf", "failed", version="2")  # ingested again, as version 2
    assert again["error"]
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/broken.pdf")
    assert status == 200 and doc["version"] == 2 and doc["status"] == "failed"


def test_revoking_a_key_in_the_page_refuses_it(page, stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="adk")
    _, keys = upload_admin.get("/admin/keys")
    key_id = next(k["id"] for k in keys["keys"] if k["entity_ids"] == [tenant.entity_id])
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.revoke_key(key_id)
    status, body = tenant.upload.get(f"/entities/{tenant.entity_id}/documents")
    assert status == 401, body


def test_user_data_is_rendered_as_text_never_as_html(page, stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="adx")
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    from urllib.parse import quote

    status, _ = tenant.upload.put(f"/entities/{tenant.entity_id}/documents/{quote(hostile, safe='')}"
                                  f"?title={quote('<b>bold</b> title')}",
                                  raw=b"The quartermaster counts the rope coils.", headers={"Content-Type": "text/plain"})
    assert status == 202
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.documents(tenant.entity_id)
    doc = page.wait_document(hostile, "ready")
    assert doc["title"] == "<b>bold</b> title"
    assert not page.find_all("#docs-table img") and not page.find_all("#docs-table script")
    assert not page.find_all("#docs-table b")
    results = page.search("quartermaster rope coils", entity_ids=[tenant.entity_id])
    assert results[0]["document_id"] == hostile
    assert not page.find_all("#search-results img")
    assert page.browser.execute_script("return window.__pwned === undefined")


def test_sign_in_screen_shows_no_session_before_sign_in(page, stack):
    assert not page.find("#session").is_displayed()
    assert "signed in" not in page.browser.find_element("tag name", "body").text.lower()
    page.sign_in(stack.admin_key)
    page.signed_in()
    assert page.find("#session").is_displayed() and page.find("#signout").is_displayed()


async def test_search_routing_is_indented_json_that_wraps(page, stack, tenant):
    put_document(tenant, "long.txt", "The fog signal sounds every night. " * 20)
    await wait_document(tenant, "long.txt")
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.search("signal " + "x" * 400, entity_ids=[tenant.entity_id])
    shown = page.browser.execute_script("return document.getElementById('search-extra-json').textContent")
    assert '\n  "routing": {' in shown  # indented, one field a line
    overflow = page.browser.execute_script(
        "const pre = document.getElementById('search-extra-json');"
        "document.getElementById('search-extra').open = true;"
        "return [document.documentElement.scrollWidth - document.documentElement.clientWidth,"
        "        pre.scrollWidth - pre.clientWidth];")
    assert overflow == [0, 0]  # nothing scrolls sideways


@pytest.mark.skipif(not _router_reports(), reason="the router's report is not installed")
def test_telemetry_puts_no_count_on_the_latency_axis(page, stack, tenant):
    status, _ = Client(stack.url("search"), tenant.key).post(
        "/search", {"query": "fog signal", "entity_ids": [tenant.entity_id]})
    assert status == 200
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.telemetry()
    labels = [e.text for e in page.find_all("#telemetry-report .bar-label")]
    assert "p50" in labels and "n" not in labels
    values = [e.text for e in page.find_all("#telemetry-report .bar-value")]
    assert values and [v for v in values if len(v.partition(".")[2]) > 3] == []
    empty = page.browser.execute_script(
        "return [...document.querySelectorAll('#telemetry-report h3, #telemetry-report h4')]"
        ".filter(h => !h.nextElementSibling || !h.nextElementSibling.textContent.trim()).map(h => h.textContent)")
    assert empty == []


def test_the_models_screen_shows_the_serving_model_and_refuses_a_job_naming_why(page, stack):
    # a cutover to the serving model itself: refused, no job queued (this shared stack keeps its model)
    page.sign_in(stack.admin_key)
    page.signed_in()
    page.screen("models")
    assert page.text_of("#models-serving").startswith("sentence-transformers/all-MiniLM-L6-v2 (dimension 384)")
    jobs_before = len(page.find_all("#models-jobs tbody tr"))
    page.find('#model-action option[value="cutover"]').click()
    page.find('#model-name option[value="all-MiniLM-L6-v2"]').click()
    page.find("#model-job-button").click()
    page.wait(lambda _: "serving model already" in page.flash(), message="no refusal shown")
    assert "(field: model)" in page.flash()
    assert len(page.find_all("#models-jobs tbody tr")) == jobs_before
