"""The admin page's telemetry hook and its search URL, without a stack: the router's report is found
by module name, an absent one is the page's empty state (404), a broken one is an error."""

from __future__ import annotations

import sys
import types

import pytest
from edgeindex.admin import service
from edgeindex.admin.service import AdminService, search_url
from edgeindex.errors import NotFound


def _report(monkeypatch, summary) -> None:
    routing = types.ModuleType("edgeindex.routing")
    report = types.ModuleType("edgeindex.routing.report")
    if summary is not None:
        report.summary = summary
    routing.report = report
    monkeypatch.setitem(sys.modules, "edgeindex.routing", routing)
    monkeypatch.setitem(sys.modules, "edgeindex.routing.report", report)


async def test_no_router_report_is_the_empty_state(monkeypatch):
    monkeypatch.setattr(service, "TELEMETRY_MODULE", "edgeindex.no_such_package.report")
    with pytest.raises(NotFound, match="no telemetry yet"):
        await AdminService(db=None, search_url="http://x").telemetry()


async def test_the_router_reports_summary_is_served_as_json(monkeypatch):
    seen = []

    async def summary(db):
        seen.append(db)
        return {"strategies": {"keyword": 12, "vector": 30, "hybrid": 58}, "searches": 100}

    _report(monkeypatch, summary)
    db = object()
    data = await AdminService(db=db, search_url="http://x").telemetry()
    assert data == {"strategies": {"keyword": 12, "vector": 30, "hybrid": 58}, "searches": 100}
    assert seen == [db]  # the report reads the worker's own database


async def test_an_empty_report_or_one_without_summary_is_the_empty_state(monkeypatch):
    _report(monkeypatch, lambda db: {})
    with pytest.raises(NotFound):
        await AdminService(db=None, search_url="http://x").telemetry()
    _report(monkeypatch, None)
    with pytest.raises(NotFound):
        await AdminService(db=None, search_url="http://x").telemetry()


async def test_a_report_that_fails_to_import_is_an_error_not_an_empty_state(monkeypatch):
    # the report module exists but imports something missing: hiding that would hide a broken deploy
    def broken_find(name, *args, **kwargs):
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    monkeypatch.setattr(service.importlib, "import_module", broken_find)
    with pytest.raises(ModuleNotFoundError):
        await AdminService(db=None, search_url="http://x").telemetry()


class _Env:
    def __init__(self, url: str, port: int) -> None:
        self._url = url
        self.config = types.SimpleNamespace(worker=lambda name: types.SimpleNamespace(port=port))

    def var(self, name):
        assert name == "SEARCH_URL"
        return self._url


def test_search_url_is_the_var_or_the_declared_search_worker(monkeypatch):
    monkeypatch.delenv("EDGEINDEX_HOST", raising=False)
    assert search_url(_Env("https://search.example.com", 8789)) == "https://search.example.com"
    assert search_url(_Env("", 9123)) == "http://127.0.0.1:9123"
    monkeypatch.setenv("EDGEINDEX_HOST", "0.0.0.0")
    assert search_url(_Env(" ", 9123)) == "http://127.0.0.1:9123"
