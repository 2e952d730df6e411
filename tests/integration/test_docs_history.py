"""The agent of docs/history.md, run as written against the shared stack: it reads a document, the
document changes, and it asks what changed since it read it and what the document said then."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "history.md"


def test_the_agent_in_the_docs_sees_what_changed_since_it_read(stack, tenant, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    for name, value in {"EDGEINDEX_API_KEY": tenant.key, "EDGEINDEX_SEARCH_URL": stack.url("search"),
                        "EDGEINDEX_UPLOAD_URL": stack.url("upload"), "EDGEINDEX_ENTITY": tenant.entity_id}.items():
        monkeypatch.setenv(name, value)
    exec(compile(blocks[0], str(DOC), "exec"), {})
    printed = capsys.readouterr().out.replace("\\n", " ")  # the reprs' escaped newlines
    assert re.search(r"changed: '# Handbook\s+The office opens at nine and closes at five\.' -> "
                     r"'# Handbook\s+The office opens at ten and closes at six\.'", printed), printed
    assert re.search(r"as read: '# Handbook\s+The office opens at nine and closes at five\.' \(version 1\)",
                     printed), printed
