"""Every shell block of README.md, run in order in one bash against a real `edgeindex dev` stack.

The README's tour reads EDGEINDEX_UPLOAD_URL / EDGEINDEX_SEARCH_URL / EDGEINDEX_MCP_URL /
EDGEINDEX_ADMIN_KEY and falls back to the dev ports, so what a user pastes works on the default
ports and this test points the same text at a stack on free ports. ``curl`` is wrapped with
``--fail-with-body``: an HTTP error (a 415 for a missing content type, a 400, a 404) fails the
block like a non-zero exit does. A block preceded by ``<!-- not run: reason -->`` is skipped; only
the install and test commands may be, and they must be exactly the commands .ci/run runs.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from edgeindex.runtime.dev import free_port

from ..helpers import ROOT
from .test_dev_command import start_dev, stop, wait_up

README = ROOT / "README.md"
SHELLS = {"bash", "sh", "shell"}
FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not run:.*-->\s*$")
PRELUDE = """set -e
curl() { command curl --fail-with-body --show-error "$@"; }
"""
DONE = "::readme-tour-done"


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    skipped: bool


def blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of ``markdown``; a shell block after a not-run comment is marked skipped."""
    found: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        start, language = i, opening.group(1).lower()
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        found.append(Block(start + 1, language, "\n".join(body) + "\n", bool(NOT_RUN.match(previous.strip()))))
        i += 1
    return found


def script(markdown: str) -> str:
    """One bash script: the prelude, then each runnable shell block behind a marker naming its line."""
    parts = [PRELUDE]
    for block in blocks(markdown):
        if block.language in SHELLS and not block.skipped:
            parts.append(f"echo; echo '::block {block.line}'\n{block.text}")
    parts.append(f"echo; echo '{DONE}'\n")
    return "\n".join(parts)


def run(markdown: str, env: dict[str, str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script(markdown)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def failure(result: subprocess.CompletedProcess) -> str:
    markers = re.findall(r"^::block (\d+)$", result.stdout, re.M)
    where = f"the block at README.md line {markers[-1]}" if markers else "the prelude"
    return (f"{where} failed (exit {result.returncode})\n--- stdout (tail)\n{result.stdout[-4000:]}\n"
            f"--- stderr (tail)\n{result.stderr[-4000:]}")


def test_only_the_install_and_test_commands_are_not_run():
    readme = README.read_text(encoding="utf-8")
    skipped = [b.text.strip() for b in blocks(readme) if b.skipped]
    assert skipped == ["bash scripts/install.sh && .venv/bin/edgeindex dev",
                       "bash scripts/install.sh && .venv/bin/python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert skipped[1] in ci.splitlines(), ".ci/run must run exactly the README's test command"
    assert all(b.language in SHELLS for b in blocks(readme) if b.skipped)
    assert sum(b.language in SHELLS and not b.skipped for b in blocks(readme)) >= 5


def test_a_failing_block_fails_the_run(tmp_path):
    """The runner itself: a non-zero exit, or an HTTP error through the curl wrapper, stops the run."""
    exits = "```sh\necho one\n```\n\n```bash\nfalse\necho not-reached\n```\n"
    result = run(exits, dict(os.environ), tmp_path, timeout=60)
    assert result.returncode != 0 and "not-reached" not in result.stdout and DONE not in result.stdout
    assert "line 5 " in failure(result)
    unterminated = "```sh\nprintf no-newline\n```\n\n```sh\nfalse\n```\n"
    assert "line 5 " in failure(run(unterminated, dict(os.environ), tmp_path, timeout=60))
    refused = f"```sh\ncurl -s http://127.0.0.1:{free_port()}/nothing-listens-here\n```\n"
    assert run(refused, dict(os.environ), tmp_path, timeout=60).returncode != 0
    skipped = "<!-- not run: a demo -->\n```sh\nfalse\n```\n```sh\necho fine\n```\n"
    result = run(skipped, dict(os.environ), tmp_path, timeout=60)
    assert result.returncode == 0 and DONE in result.stdout, failure(result)


@pytest.mark.slow
def test_readme_tour_runs_against_edgeindex_dev(tmp_path):
    ports = {name: free_port() for name in ("upload", "ingest", "search", "mcp")}
    # the dev stack makes its own admin key, and the tour reads it from the state folder as a user's would
    state = tmp_path / "state"
    dev = start_dev(state, ports, admin_key=None)
    try:
        wait_up(dev)
        env = {**os.environ, "EDGEINDEX_STATE_DIR": str(state)}
        env.pop("EDGEINDEX_ADMIN_KEY", None)
        env.pop("EDGEINDEX_API_KEY", None)
        env.pop("EDGEINDEX_URL", None)
        env.pop("EDGEINDEX_CONFIG", None)
        for name, port in ports.items():
            env[f"EDGEINDEX_{name.upper()}_URL"] = f"http://127.0.0.1:{port}"
            env[f"EDGEINDEX_{name.upper()}_PORT"] = str(port)  # what the CLI reads from wrangler.toml
        result = run(README.read_text(encoding="utf-8"), env, ROOT)
    finally:
        out = stop(dev)
    assert result.returncode == 0 and DONE in result.stdout, failure(result)
    assert dev.returncode == 0, out
    # what the tour promises in its prose, beyond exit codes
    text = result.stdout
    assert re.search(r'"document_id": ?"oncall"', text), failure(result)
    assert re.search(r'"document_id": ?"q3-report"', text), failure(result)
    assert "process_refund" in text and '"orders"' in text
    assert '"tools"' in text and '"search"' in text  # MCP's tools/list
    assert '"worker": "mcp"' in text or '"worker":"mcp"' in text  # the MCP worker's /health
