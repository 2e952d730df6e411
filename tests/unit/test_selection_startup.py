"""The search and mcp workers' selection start-up (workers/_startup.py selection_service): the local
embedder is prepared with the int8 selection graph; a remote one has nothing to prepare."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from edgeindex.workers._startup import selection_service


class _Prepared:
    """An embedder that records what it was prepared with (the local one's prepare_select)."""

    def __init__(self) -> None:
        self.graphs: list[str] = []

    def prepare_select(self, graph: str) -> str:
        self.graphs.append(graph)
        return graph


def _env(embedder) -> SimpleNamespace:
    return SimpleNamespace(worker_name="search", AI=SimpleNamespace(embedder=embedder, llm=None), DB=object(),
                           KV=object())


def test_the_local_embedder_is_prepared_with_the_int8_selection_graph():
    embedder = _Prepared()
    service = asyncio.run(selection_service(_env(embedder)))
    assert embedder.graphs == ["int8"] and service.embedder is embedder
    assert asyncio.run(selection_service(_env(object()))).embedder is not None   # a remote embedder: nothing to prepare
