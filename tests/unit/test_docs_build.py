"""The manual builds with `mkdocs build --strict` (a broken link, anchor or missing page fails it),
its generated pages cover every configuration key and every route, and the front door and the
architecture stay within their sizes."""

from __future__ import annotations

import html
import importlib
import subprocess
import sys

import pytest
from pydantic import BaseModel

from ..helpers import ROOT

README_MAX = 15_000
ARCHITECTURE_MAX = 8_192
WORKERS = ["upload", "ingest", "search", "mcp"]


def test_readme_and_architecture_stay_small():
    assert (ROOT / "README.md").stat().st_size <= README_MAX
    assert (ROOT / "ARCHITECTURE.md").stat().st_size <= ARCHITECTURE_MAX


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    try:
        import material  # noqa: F401  (the theme: the `docs` extra)
        import mkdocs  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"the manual's build needs the docs extra (pip install -e '.[docs]'): {exc}")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return out


def _leaf_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    hook = _hook()
    keys = []
    for name, field in model.model_fields.items():
        if not prefix and name in ("path", "checked_vars"):  # set by load(), not keys of the file
            continue
        inner, suffix = hook._unwrap(field.annotation)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            keys += _leaf_keys(inner, f"{prefix}{name}{suffix}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def _hook():
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        return importlib.import_module("generated")
    finally:
        sys.path.pop(0)


def test_the_configuration_page_lists_every_key_of_the_checked_config(site):
    from edgeindex import config

    page = html.unescape((site / "configuration" / "index.html").read_text(encoding="utf-8"))
    keys = _leaf_keys(config.Config)
    assert len(keys) > 40, "the walk found too few keys to mean anything"
    missing = [key for key in keys if f"<code>{key}</code>" not in page]
    assert not missing, f"configuration keys missing from the manual: {missing}"
    for variable, _path in config.ENV_OVERRIDES:
        assert variable in page
    from edgeindex.worker_vars import SCHEMAS

    vars_missing = [f"workers.{worker}.vars.{var}" for worker, schema in SCHEMAS.items()
                    for var in schema.model_fields if f"<code>workers.{worker}.vars.{var}</code>" not in page]
    assert not vars_missing, f"worker vars missing from the manual: {vars_missing}"


def test_the_api_page_lists_every_route_of_every_worker(site):
    page = html.unescape((site / "api" / "index.html").read_text(encoding="utf-8"))
    for worker in WORKERS:
        routes = importlib.import_module(f"edgeindex.workers.{worker}").routes.routes
        assert routes, worker
        for route in routes:
            assert f"{route.method} <code>{route.path}</code>" in page, (worker, route.method, route.path)
