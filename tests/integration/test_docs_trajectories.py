"""The agent loop of docs/trajectories.md, run as written against the shared stack."""

from __future__ import annotations

import re
from pathlib import Path

from ..helpers import put_document, run_docs_example, wait_document
from .test_sdk import FACTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "trajectories.md"


async def test_the_agent_loop_in_the_docs_stops_when_a_step_brings_nothing_new(stack, tenant, monkeypatch, capsys):
    for name, text in FACTS.items():
        put_document(tenant, f"loop-{name}.txt", text)
    for name in FACTS:
        await wait_document(tenant, f"loop-{name}.txt")
    printed = run_docs_example(DOC, stack, tenant, monkeypatch, capsys)
    steps = int(re.search(r"stopped after step (\d+):", printed).group(1))
    assert 1 < steps < 5, printed  # it stopped on novelty, not at the loop's bound
    for name in FACTS:
        assert f"loop-{name}.txt" in printed, printed
