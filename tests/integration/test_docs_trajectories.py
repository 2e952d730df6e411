"""The agent loop of docs/trajectories.md, run as written against the shared stack."""

from __future__ import annotations

import re
from pathlib import Path

from ..helpers import put_document, wait_document
from .test_sdk import FACTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "trajectories.md"


async def test_the_agent_loop_in_the_docs_stops_when_a_step_brings_nothing_new(stack, tenant, monkeypatch, capsys):
    for name, text in FACTS.items():
        put_document(tenant, f"loop-{name}.txt", text)
    for name in FACTS:
        await wait_document(tenant, f"loop-{name}.txt")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    for name, value in {"EDGEINDEX_API_KEY": tenant.key, "EDGEINDEX_SEARCH_URL": stack.url("search"),
                        "EDGEINDEX_UPLOAD_URL": stack.url("upload"), "EDGEINDEX_ENTITY": tenant.entity_id}.items():
        monkeypatch.setenv(name, value)
    exec(compile(blocks[0], str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    steps = int(re.search(r"stopped after step (\d+):", printed).group(1))
    assert 1 < steps < 5, printed  # it stopped on novelty, not at the loop's bound
    for name in FACTS:
        assert f"loop-{name}.txt" in printed, printed
