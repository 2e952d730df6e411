"""The house's layering: no import loops between packages, and what serves requests never loads
evaluation, router training, the SDK, test drivers or the dev stack's emulators."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"edgeindex": ROOT / "shared", "edgeindex.workers": ROOT / "workers"}
# What a worker process must not import: dev, evaluation and test-only code and their extras.
NOT_SERVING = ("edgeindex.evaluation", "edgeindex.admin.browser", "edgeindex_client", "chromadb", "bm25s",
               "matplotlib", "selenium", "moto", "ranx", "hypothesis", "pytest")


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for prefix, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            found[".".join([prefix, *parts])] = (path, path.name == "__init__.py")
    return found


def module_level_imports(tree: ast.Module):
    """Imports that run when the module loads: top level, and inside top-level if/try (not TYPE_CHECKING)."""
    def walk(body):
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield node
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from walk(node.body)
                yield from walk(node.orelse)
            elif isinstance(node, ast.Try):
                yield from walk(node.body)
                for handler in node.handlers:
                    yield from walk(handler.body)
    yield from walk(tree.body)


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, (path, is_package) in known.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in known)
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{a.name}" for a in node.names} & known.keys()
            graph[name].update(submodules)
            if len(submodules) < len(node.names) and target in known:
                graph[name].add(target)
    return graph


def package_of(module: str) -> str:
    """``edgeindex.search.engine`` → ``edgeindex.search``; top-level modules stand for themselves."""
    return ".".join(module.split(".")[:2])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_loops_between_modules():
    assert cycles(import_graph()) == []


def test_no_import_loops_between_packages():
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in import_graph().items():
        for target in targets:
            if package_of(source) != package_of(target) and target != "edgeindex":
                packages[package_of(source)].add(package_of(target))
    assert cycles(packages) == []


def test_the_graph_sees_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert "edgeindex.search.engine" in import_graph()["edgeindex.search.service"]


def test_workers_load_nothing_of_evaluation_or_dev_tools():
    script = ("import sys\n"
              "import edgeindex.cli, edgeindex.workers.upload, edgeindex.workers.ingest, edgeindex.workers.search, "
              "edgeindex.workers.mcp\n"
              f"bad = sorted(m for m in sys.modules if m.startswith({NOT_SERVING!r}))\n"
              "print('\\n'.join(bad))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
