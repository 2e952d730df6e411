"""The agent of docs/history.md, run as written against the shared stack: it reads a document, the
document changes, and it asks what changed since it read it and what the document said then."""

from __future__ import annotations

import re
from pathlib import Path

from ..helpers import run_docs_example

DOC = Path(__file__).resolve().parents[2] / "docs" / "history.md"


def test_the_agent_in_the_docs_sees_what_changed_since_it_read(stack, tenant, monkeypatch, capsys):
    # the reprs' escaped newlines as spaces
    printed = run_docs_example(DOC, stack, tenant, monkeypatch, capsys).replace("\\n", " ")
    assert re.search(r"changed: '# Handbook\s+The office opens at nine and closes at five\.' -> "
                     r"'# Handbook\s+The office opens at ten and closes at six\.'", printed), printed
    assert re.search(r"as read: '# Handbook\s+The office opens at nine and closes at five\.' \(version 1\)",
                     printed), printed
