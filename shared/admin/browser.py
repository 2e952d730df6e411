"""Drive the admin page in a real headless browser: Debian's ``chromium`` through its ``chromedriver``
(selenium). The browser tests and ``scripts/screenshots.py`` use it; nothing here is imported
by the worker. Paths come from the system (``scripts/install.sh`` installs both packages): selenium
is never allowed to fetch a browser or a driver of its own.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
WAIT_SECONDS = 30.0


class BrowserMissing(RuntimeError):
    pass


def find_browser() -> tuple[str, str]:
    """(browser binary, chromedriver) from EDGEINDEX_CHROMIUM / EDGEINDEX_CHROMEDRIVER or PATH."""
    binary = os.environ.get("EDGEINDEX_CHROMIUM") or next(
        (found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)
    driver = os.environ.get("EDGEINDEX_CHROMEDRIVER") or shutil.which("chromedriver")
    if not binary or not driver:
        raise BrowserMissing("chromium and chromedriver are needed (bash scripts/install.sh installs Debian's "
                             "chromium and chromium-driver)")
    return binary, driver


@contextmanager
def chromium(*, width: int = 1360, height: int = 1000):
    """A headless chromium session, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = find_browser()
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never try to download anything
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--disable-extensions", "--no-first-run",
                "--password-store=basic", "--lang=en-US"):
        options.add_argument(arg)
    browser = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield browser
    finally:
        browser.quit()


class AdminPage:
    """The admin page's screens as methods; each waits (bounded) for what it expects to see."""

    def __init__(self, browser, base_url: str, *, timeout: float = WAIT_SECONDS) -> None:
        self.browser = browser
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    # --- plumbing ---------------------------------------------------------------------------------

    def wait(self, condition, timeout: float | None = None, message: str = ""):
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.browser, timeout or self.timeout, poll_frequency=0.2).until(condition, message)

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.browser.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str):
        from selenium.webdriver.common.by import By

        return self.browser.find_elements(By.CSS_SELECTOR, css)

    def visible(self, css: str):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec

        return self.wait(ec.visibility_of_element_located((By.CSS_SELECTOR, css)), message=f"{css} never showed")

    def type(self, css: str, text: str, *, clear: bool = True) -> None:
        field = self.visible(css)
        if clear:
            field.clear()
        field.send_keys(text)

    def select(self, css: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select

        self.wait(lambda _: any(o.get_attribute("value") == value for o in Select(self.find(css)).options),
                  message=f"{value!r} never offered in {css}")
        Select(self.find(css)).select_by_value(value)

    def text_of(self, css: str) -> str:
        return self.find(css).text

    def screenshot(self, path: Path, *, whole_page: bool = True) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not whole_page:  # the window as a person sees it, at its set size
            self.browser.save_screenshot(str(path))
            return path
        size = self.browser.get_window_size()
        height = self.browser.execute_script("return document.documentElement.scrollHeight")
        self.browser.set_window_size(size["width"], min(max(height + 140, 600), 2400))  # the whole page
        self.browser.save_screenshot(str(path))
        self.browser.set_window_size(size["width"], size["height"])
        return path

    # --- screens --------------------------------------------------------------------------------------

    def open(self) -> None:
        self.browser.get(f"{self.base_url}/admin")
        self.visible("#signin-form, #app")

    def sign_in(self, key: str) -> None:
        self.open()
        self.type("#admin-key", key)
        self.find("#signin-button").click()

    def signed_in(self) -> None:
        self.visible("#app")
        self.loaded("tenants")

    def sign_in_error(self) -> str:
        self.wait(lambda _: self.text_of("#signin-error"), message="no sign-in error shown")
        return self.text_of("#signin-error")

    def loaded(self, name: str) -> None:
        self.wait(lambda _: self.find(f"#screen-{name}").get_attribute("data-state") == "loaded",
                  message=f"screen {name} never loaded")

    def screen(self, name: str) -> None:
        self.find(f'nav button[data-screen="{name}"]').click()
        self.visible(f"#screen-{name}")
        self.loaded(name)

    def flash(self) -> str:
        return self.text_of("#flash")

    def create_tenant(self, entity_id: str, *, kind: str = "user", name: str = "") -> None:
        self.screen("tenants")
        self.type("#tenant-id", entity_id)
        self.select("#tenant-kind", kind)
        self.type("#tenant-name", name)
        self.find("#tenant-create").click()
        self.wait(lambda _: self.tenant_row(entity_id), message=f"tenant {entity_id} never listed")

    def tenant_row(self, entity_id: str) -> list[str] | None:
        return next((cells for cells in self.rows("#tenants-table") if cells[0] == entity_id), None)

    def create_key(self, name: str, entity_ids: list[str]) -> str:
        """The new key's secret as the page shows it (once)."""
        self.screen("tenants")
        self.type("#key-name", name)
        self.type("#key-entities", ", ".join(entity_ids))
        self.find("#key-create").click()
        self.wait(lambda _: self.text_of("#new-key-secret").startswith("ei_"), message="no key secret shown")
        return self.text_of("#new-key-secret")

    def key_row(self, key_id: str) -> list[str] | None:
        return next((cells for cells in self.rows("#keys-table") if cells[0] == key_id), None)

    def revoke_key(self, key_id: str) -> None:
        from selenium.webdriver.support import expected_conditions as ec

        self.screen("tenants")
        self.wait(lambda _: self.key_row(key_id), message=f"key {key_id} never listed")
        self.browser.execute_script(
            "for (const tr of document.querySelectorAll('#keys-table tbody tr')) {"
            "  if (tr.dataset.key === arguments[0]) tr.querySelector('button.revoke').click(); }", key_id)
        self.wait(ec.alert_is_present(), message="no confirmation asked").accept()
        self.wait(lambda _: (cells := self.key_row(key_id)) is not None and cells[5],
                  message=f"key {key_id} never shown revoked")

    def upload_text(self, entity_id: str, document_id: str, text: str, *, title: str = "",
                    content_type: str = "text/plain") -> str:
        self.screen("upload")
        self.select("#upload-entity", entity_id)
        self.type("#upload-id", document_id)
        self.type("#upload-title", title)
        self.select("#upload-type", content_type)
        self.type("#upload-text", text)
        self.browser.execute_script("document.getElementById('upload-result').textContent = ''")
        self.find("#upload-button").click()
        self.wait(lambda _: self.text_of("#upload-result"), message="no upload result shown")
        return self.text_of("#upload-result")

    def documents(self, entity_id: str) -> None:
        self.screen("documents")
        self.select("#docs-entity", entity_id)
        self.find("#docs-refresh").click()

    def rows(self, table: str) -> list[list[str]]:
        """A table's cells as text, read in one script call: the page re-renders tables while it polls,
        so elements found one by one can go stale between two reads."""
        return self.browser.execute_script(
            "return [...document.querySelectorAll(arguments[0] + ' tbody tr')].map("
            "tr => [...tr.children].map(td => (td.childNodes[0] ? td.childNodes[0].textContent : '').trim()))",
            table)

    def document_rows(self) -> list[dict]:
        names = ("document_id", "version", "status", "step", "error", "title", "chunks", "updated")
        return [dict(zip(names, cells)) for cells in self.rows("#docs-table")]

    def retry(self, document_id: str) -> None:
        clicked = self.browser.execute_script(
            "for (const tr of document.querySelectorAll('#docs-table tbody tr')) {"
            "  if (tr.children[0].textContent === arguments[0]) {"
            "    const b = tr.querySelector('button.retry'); if (b) { b.click(); return true; } } }"
            "return false;", document_id)
        assert clicked, f"no retry button for {document_id}"

    def wait_document(self, document_id: str, status: str, *, version: str | None = None,
                      timeout: float = 180.0) -> dict:
        """Wait, with the page refreshing itself, until the document shows ``status``."""
        def shown(_):
            for doc in self.document_rows():
                if doc["document_id"] == document_id and doc["status"] == status and (
                        version is None or doc["version"] == version):
                    return doc
            return None

        return self.wait(shown, timeout, message=f"{document_id} never shown {status}")

    def search(self, query: str, *, entity_ids: list[str] | None = None, k: int = 5) -> list[dict]:
        self.screen("search")
        self.type("#search-query", query)
        self.type("#search-entities", ", ".join(entity_ids or []))
        self.type("#search-k", str(k))
        self.browser.execute_script("document.getElementById('search-meta').textContent = ''")
        self.find("#search-button").click()
        self.wait(lambda _: "result(s) in" in self.text_of("#search-meta"), message="no search answer shown")
        names = ("rank", "score", "vector", "text", "trigram", "entity_id", "document_id", "chunk")
        return [dict(zip(names, cells)) for cells in self.rows("#search-results")]

    def telemetry(self) -> str:
        self.screen("telemetry")
        self.wait(lambda _: self.find("#telemetry-empty").is_displayed() or self.find_all("#telemetry-report *"),
                  message="telemetry never shown")
        return self.text_of("#screen-telemetry")
