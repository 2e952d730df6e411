"""ruff (lint and import order) and mypy (types) over the product, as CI runs them: clean, or the test
names what each found."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["shared", "workers", "clients/python", "tests", "scripts", "setup.py", "docs/hooks"]


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed in this environment: scripts/install.sh installs the [test] extra")
    return found


def test_ruff_is_clean():
    done = subprocess.run([tool("ruff"), "check", "--no-cache", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_mypy_is_clean(tmp_path):
    done = subprocess.run([tool("mypy"), "--cache-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
