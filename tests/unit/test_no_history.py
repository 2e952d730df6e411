"""No tracked file narrates the development history: comments, docstrings and docs say what the code
does and why, in the present tense. Which run found what belongs in git history, in CHANGELOG.md, on the
benchmarks page or in a decision record (docs/decisions/), which are the only files left out."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the repository keeps of its measurements: the changelog, the benchmarks page (figures, the
# same-run A/Bs behind each decision, and the last commit that holds the labs) and the decision records
EXEMPT_FILES = {"CHANGELOG.md", "docs/benchmarks.md"}
EXEMPT_FOLDERS = ("docs/decisions/",)

_ORDINAL = (r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth"
            r"|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth"
            r"|(twenty|thirty)-\w+|\d+(st|nd|rd|th))")
PATTERNS = {
    "an ordinal session": re.compile(rf"\b{_ORDINAL}\s+session\b", re.IGNORECASE),
    "a numbered session": re.compile(r"\bsession\s*\d+\b", re.IGNORECASE),
    "the sessions so far": re.compile(rf"\bthe {_ORDINAL} \w+ sessions\b", re.IGNORECASE),
    "until a session": re.compile(r"\buntil the \w+ session\b", re.IGNORECASE),
    "a lab result file": re.compile(r"\bresults/(throughput|router|selection|enhance|any-language|admin)\b",
                                    re.IGNORECASE),
    "an experiment's arms": re.compile(r"(?<![\w/])A/B(?![\w/.])"),
    "a measurement's date and time": re.compile(r"\b\d{4}-\d{2}-\d{2}\b.*\bUTC\b", re.IGNORECASE),
    "an abandoned attempt": re.compile(r"\btried (first )?and dropped\b", re.IGNORECASE),
}


def findings(path: str, text: str) -> list[str]:
    return [f"{path}:{number}: {what}: {line.strip()[:120]}"
            for number, line in enumerate(text.splitlines(), 1)
            for what, pattern in PATTERNS.items() if pattern.search(line)]


def tracked_text_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [p for p in listed.decode().split("\0") if p]
    return [p for p in paths if p not in EXEMPT_FILES and not p.startswith(EXEMPT_FOLDERS)
            and p != "tests/unit/test_no_history.py"]


def test_no_tracked_file_narrates_the_history():
    found = []
    for path in tracked_text_files():
        try:
            data = (ROOT / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError):  # deleted in the worktree, or a submodule
            continue
        if b"\0" in data:
            continue
        found += findings(path, data.decode("utf-8", errors="replace"))
    assert not found, "history narrated where the code should say why:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    "# chosen in the twelfth session", "(results/throughput/README.md, session 8)", "session19/gin_pending_ab.py",
    "the workload of the first twenty sessions", "until the eleventh session the answer waited",
    "# the A/B switch of the benchmarks", "py-spy during the run (2026-11-25, 01:33 UTC)",
    "Tried first and dropped: pinning", "the 21st session's figures",
])
def test_each_pattern_is_caught(line):
    assert findings("f.py", line)


@pytest.mark.parametrize("line", [
    'bucket.put("a/b.txt", b"hello")', "words like err_42, v1.2.3, a/b, user@host",
    "one database session per process", "asyncio_default_fixture_loop_scope = \"session\"",
    "timestamps without an offset are taken as UTC", "results/tmp/",
])
def test_what_is_not_history_passes(line):
    assert not findings("f.py", line)
