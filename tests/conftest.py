"""Hooks for every kind of test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a stack shows the end of its workers' log (what CI keeps of a failure)."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name in item.fixturenames:
        path = getattr(item.funcargs.get(name), "log_path", None)
        if path is not None and Path(path).exists():
            tail = Path(path).read_text(errors="replace")[-6000:]
            report.sections.append((f"workers of {name} (the end of {path})", tail))
