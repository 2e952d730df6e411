"""The benchmark and maintenance scripts in scripts/ cannot rot unnoticed: each answers ``--help``,
every name it imports from edgeindex (at the top or inside a function) still exists, and the one
that needs no stack runs on tiny data."""

from __future__ import annotations

import ast
import importlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
# Entry points: run by users and maintainers (benchmarks, fault and isolation drivers, loaders, checks).
RUNNABLE = ["backfill_impact", "bench_ingest", "bench_models", "bench_select", "catalogue_as_beir", "chaos", "explain_search", "fuzz_isolation",
            "history_overhead",
            "load_search", "model_migration", "scale_search", "screenshots", "seed_beir", "select_router_settings", "soak",
            "tune_select", "two_hosts"]
# Imported by the scripts above, not run alone.
MODULES = ["wrk_search"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=SCRIPTS.parent)


def test_every_python_script_is_listed():
    """A new script joins the smoke test (or MODULES) when it is added."""
    assert sorted(p.stem for p in SCRIPTS.glob("*.py")) == sorted(RUNNABLE + MODULES)


@pytest.mark.parametrize("name", RUNNABLE)
def test_script_answers_help(name):
    done = run(str(SCRIPTS / f"{name}.py"), "--help")
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def imported_names(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every ``from edgeindex... import name`` and ``import edgeindex...`` anywhere in
    the file (name None for a plain import), and for imports of the scripts' own modules."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = node.module.split(".")[0]
            if root in ("edgeindex", "edgeindex_client") or root in MODULES:
                found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names
                      if alias.name.split(".")[0] in ("edgeindex", "edgeindex_client", *MODULES)]
    return found


@pytest.mark.parametrize("name", RUNNABLE + MODULES)
def test_what_a_script_imports_exists(name, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    for module_name, attribute in imported_names(SCRIPTS / f"{name}.py"):
        module = importlib.import_module(module_name)
        if attribute is not None and not hasattr(module, attribute):
            importlib.import_module(f"{module_name}.{attribute}")  # a submodule: raises if there is none


def test_imported_names_sees_imports_inside_functions(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("def main():\n    from edgeindex.search import nowhere_module\n")
    assert imported_names(script) == [("edgeindex.search", "nowhere_module")]


def test_select_router_settings_on_tiny_training_rows(tmp_path):
    """Three made-up datasets of six queries: a choice on all sets and a nested choice per held-out set."""
    from edgeindex.evaluation.router_training import COLLECT_BINS
    from edgeindex.routing.features import NAMES

    rng = random.Random(7)
    sets = [{"dataset": name, "k": 10, "bins": [{"name": b, "alpha": a} for b, a in COLLECT_BINS],
             "rows": {f"q{i}": {"features": {f: rng.random() for f in NAMES},
                                "ndcg": {b: rng.random() for b, _ in COLLECT_BINS},
                                "recall": {b: rng.random() for b, _ in COLLECT_BINS}} for i in range(6)}}
            for name in ("alpha", "beta", "gamma")]
    training = tmp_path / "training.json"
    training.write_text(json.dumps(sets))
    done = run(str(SCRIPTS / "select_router_settings.py"), str(training), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "chosen on all sets:" in done.stdout
    nested = done.stdout.split("nested", 1)[1]
    assert all(f"  {name}: chose (" in nested for name in ("alpha", "beta", "gamma"))


def test_catalogue_as_beir_writes_a_loadable_set_with_each_requests_tools(tmp_path):
    from edgeindex.evaluation import beir

    source = tmp_path / "tools"
    source.mkdir()
    tools = [{"name": "get_weather", "description": "Weather for a city.",
              "parameters": [{"name": "city", "type": "string", "description": "The city."}]},
             {"name": "convert_currency", "description": "Convert an amount.", "parameters": []}]
    queries = [{"query": "weather in Oslo, then convert 5 EUR", "expected": ["get_weather", "convert_currency"], "id": 7},
               {"query": "needs a tool nobody has", "expected": ["missing_tool"], "id": 8}]
    (source / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    (source / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    done = run(str(SCRIPTS / "catalogue_as_beir.py"), str(source), str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"out": str(tmp_path / "out"), "documents": 2, "queries": 1}
    data = beir.load(tmp_path / "out")
    assert data.qrels == {"7": {"get_weather": 1, "convert_currency": 1}}
    assert "city (string): The city." in data.corpus["get_weather"].text
