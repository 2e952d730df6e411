"""The search and mcp workers' selection start-up (workers/_startup.py selection_service): the
SELECT_QUERY_GRAPH var is checked whatever the embedder, and the local one is prepared with it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from edgeindex.errors import ConfigError
from edgeindex.workers._startup import selection_service


class _Prepared:
    """An embedder that records what it was prepared with (the local one's prepare_select)."""

    def __init__(self) -> None:
        self.graphs: list[str] = []

    def prepare_select(self, graph: str) -> str:
        self.graphs.append(graph)
        return graph


def _env(graph: str, embedder) -> SimpleNamespace:
    return SimpleNamespace(var=lambda name: {"SELECT_QUERY_GRAPH": graph}[name], worker_name="search",
                           AI=SimpleNamespace(embedder=embedder, llm=None), DB=object(), KV=object())


@pytest.mark.parametrize("embedder", [object(), _Prepared()], ids=["remote", "local"])
def test_a_bad_select_graph_refuses_start_up_naming_the_var(embedder):
    with pytest.raises(ConfigError, match="SELECT_QUERY_GRAPH") as caught:
        selection_service(_env("int4", embedder))
    assert "'int4'" in str(caught.value)
    assert getattr(embedder, "graphs", []) == []   # nothing prepared with it


def test_the_local_embedder_is_prepared_with_the_configured_graph():
    embedder = _Prepared()
    service = selection_service(_env("int8", embedder))
    assert embedder.graphs == ["int8"] and service.embedder is embedder
    assert selection_service(_env("fp32", object())).embedder is not None   # a remote embedder: nothing to prepare
