"""edgeindex as users install it: a wheel built from this tree, installed non-editable into a fresh
virtualenv (dependencies pinned to what this environment runs), holds every library file, runs
``edgeindex --help``, imports every module, and brings up each worker far enough to answer /health.

An editable install reads the source tree, so it cannot see a module or data file the wheel leaves
out; only a real wheel in a virtualenv of its own can."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from edgeindex.runtime.dev import free_port

from ..helpers import ROOT, Client
from .test_dev_command import stop, wait_up

WORKERS = ("upload", "ingest", "search", "mcp")
# Folders of the source tree and where their files land in the wheel.
LAYOUT = {"shared": "edgeindex", "workers": "edgeindex/workers", "infra/migrations": "edgeindex/migrations"}
# Modules that need an optional extra (`pip install edgeindex[eval]`, `[test]`): the workers never import them.
EXTRAS_ONLY = ("edgeindex.evaluation", "edgeindex.admin.browser")


def tracked_library_files() -> set[str]:
    """Every tracked file of the library, as its path inside the wheel."""
    listed = subprocess.run(["git", "ls-files", *LAYOUT], cwd=ROOT, capture_output=True, text=True, check=True)
    expected = set()
    for line in listed.stdout.splitlines():
        for folder, target in sorted(LAYOUT.items(), key=lambda item: -len(item[0])):
            if line.startswith(folder + "/"):
                expected.add(target + line[len(folder):])
                break
    return expected


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # a copy of the tree, so the build's egg-info and build/ folders never land in the checkout
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", ".edgeindex", "__pycache__",
                                                                "*.egg-info", "build", "site"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(out), str(source)], check=True)
    (built,) = out.glob("edgeindex-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel):
    # Not under pytest's own temp folder: that one is private to this user, and the embedded
    # PostgreSQL's binaries inside the virtualenv run as a system user of their own.
    root = Path(tempfile.mkdtemp(prefix="edgeindex-wheel-"))
    root.chmod(0o755)
    try:
        yield _install(wheel, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _install(wheel: Path, root: Path) -> Path:
    frozen = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable",
                             "--disable-pip-version-check"], capture_output=True, text=True, check=True).stdout
    constraints = root / "constraints.txt"
    constraints.write_text("".join(line + "\n" for line in frozen.splitlines()
                                   if "==" in line and not line.startswith(("edgeindex", "-e"))))
    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for what in ("torch==2.13.0", str(wheel)):
        _pip_install([*pip, "-c", str(constraints), what])
    return env


def _pip_install(command: list[str], attempts: int = 3) -> None:
    """An index that fails a request mid-resolution makes pip report the pinned versions as
    unresolvable (ResolutionImpossible); a real conflict fails every attempt."""
    for attempt in range(attempts):
        if subprocess.run(command).returncode == 0:
            return
        if attempt == attempts - 1:
            raise subprocess.CalledProcessError(1, command)


def test_wheel_holds_every_library_file(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.startswith("edgeindex-")}
    expected = tracked_library_files()
    assert any(name.endswith("routing/default_model.json") for name in expected)
    missing = sorted(expected - names)
    assert not missing, f"the wheel lacks {len(missing)} library files: {missing[:20]}"


def test_installed_cli_and_every_module_import(venv, tmp_path):
    python = str(venv / "bin" / "python")
    run = {"cwd": tmp_path, "capture_output": True, "text": True, "env": {**os.environ, "PYTHONPATH": ""}}
    where = subprocess.run([python, "-c", "import edgeindex; print(edgeindex.__file__)"], **run)
    assert str(venv) in where.stdout, where.stdout + where.stderr  # the wheel's copy, not the checkout
    helped = subprocess.run([str(venv / "bin" / "edgeindex"), "--help"], **run)
    assert helped.returncode == 0 and "dev" in helped.stdout, helped.stdout + helped.stderr
    script = ("import importlib, pkgutil, edgeindex\n"
              f"skip = {EXTRAS_ONLY!r}\n"
              "names = [m.name for m in pkgutil.walk_packages(edgeindex.__path__, 'edgeindex.')\n"
              "         if not m.name.startswith(skip)]\n"
              "for name in names: importlib.import_module(name)\n"
              "print(len(names))\n")
    imported = subprocess.run([python, "-c", script], **run)
    assert imported.returncode == 0, imported.stderr
    assert int(imported.stdout.split()[-1]) > 100


@pytest.mark.slow
def test_installed_workers_answer_health(venv, tmp_path):
    # what infra/Dockerfile puts beside the package: the deployment's wrangler.toml, nothing else
    shutil.copy(ROOT / "wrangler.toml", tmp_path / "wrangler.toml")
    ports = {name: free_port() for name in WORKERS}
    env = {**os.environ, "PYTHONPATH": "", "EDGEINDEX_STATE_DIR": str(tmp_path / "state"),
           "EDGEINDEX_ADMIN_KEY": "wheel-test-admin",
           **{f"EDGEINDEX_{name.upper()}_PORT": str(port) for name, port in ports.items()}}
    env.pop("EDGEINDEX_CONFIG", None)
    process = subprocess.Popen([str(venv / "bin" / "edgeindex"), "dev"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_up(process)
        for name, port in ports.items():
            status, body = Client(f"http://127.0.0.1:{port}").get("/health")
            assert status == 200 and body["worker"] == name, body
    finally:
        out = stop(process)
    assert process.returncode == 0, out
