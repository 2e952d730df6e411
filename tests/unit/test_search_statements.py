"""The search statements as raw queries: converted once, parameters passed in the right order."""

from __future__ import annotations

import re

import pytest
from edgeindex.search import engine
from edgeindex.search.cache_keys import CacheKeys
from edgeindex.search.service import routed_keys
from edgeindex.search.statements import Statement


def test_named_placeholders_become_numbered_ones_in_order_of_first_use():
    statement = Statement.convert("SELECT %(b)s, %(a)s, %(b)s::int, s.term %% w.term")
    assert statement.text == "SELECT $1, $2, $1::int, s.term % w.term"
    assert statement.names == ("b", "a")
    assert statement.args({"a": 1, "b": 2, "unused": 3}) == [2, 1]


def test_a_lone_percent_sign_is_refused():
    with pytest.raises(ValueError, match="lone %"):
        Statement.convert("SELECT 5 % 3, %(a)s")


def test_a_missing_parameter_is_named():
    with pytest.raises(KeyError, match="limit"):
        Statement.convert("SELECT %(limit)s").args({})


def test_the_search_statements_are_fully_converted():
    for statement in (engine.LEXICAL, engine.HYBRID, engine.SEARCH):
        assert "%(" not in statement.text and "/*" not in statement.text.replace("/*+", "")
        numbers = {int(n) for n in re.findall(r"\$(\d+)", statement.text)}
        assert numbers == set(range(1, len(statement.names) + 1))
    # one statement takes the scope's verdict from its own CTE, never from the worker
    assert "nonempty" not in engine.SEARCH.names and "exact" not in engine.SEARCH.names
    assert {"nonempty", "exact", "lexical_ids"} <= set(engine.HYBRID.names)


class _Version:
    def __init__(self, number: int) -> None:
        self.version = number


def test_auto_keys_name_the_model_version_in_both_caches():
    keys = CacheKeys(exact="e", namespace="n")
    one, again, two = routed_keys(keys, _Version(1)), routed_keys(keys, _Version(1)), routed_keys(keys, _Version(2))
    assert one == again
    # a semantic hit is never served from an answer another model version decided
    assert one.namespace != two.namespace and one.exact != two.exact
    assert one.namespace != keys.namespace


def _params(**body):
    from edgeindex.search.request import parse_request

    request = parse_request({"query": "blood pressure", "entity_ids": ["e"], **body}, max_k=100, max_query_chars=2000)
    return engine.build_params(request, ["e"], None, limit=request.k)


def test_each_search_statement_leaves_out_only_what_its_parameters_leave_idle():
    """Planning grows with what a statement holds: a search without document-level filters runs
    no documents EXISTS, one without neighbours no neighbours join, one without enhancement terms
    no expansion CTE; a search that asks for them gets them."""
    exists, lateral, expansion = "SELECT 1 FROM documents d", "AS neighbours\n    FROM chunks n", "expanded"
    plain = _params()
    for name in ("lexical", "hybrid", "search"):
        text = engine.statement(name, plain).text
        assert exists not in text and lateral not in text and expansion not in text
    filtered = _params(filters={"tags": ["t"]})
    # the lexical half's four candidate branches and the HNSW walk; the exact branch that runs
    # only without document-level filters never holds it
    assert engine.statement("search", filtered).text.count(exists) == 5
    assert engine.statement("lexical", filtered).text.count(exists) == 4
    assert engine.statement("hybrid", filtered).text.count(exists) == 1
    near = _params(include={"neighbours": 1})
    assert lateral in engine.statement("search", near).text and lateral in engine.statement("hybrid", near).text
    assert exists not in engine.statement("search", near).text
    enhanced = {**plain, "expansion_terms": ["pressur"], "expansion_configs": ["english"], "expansion_weights": [0.5]}
    assert expansion in engine.statement("lexical", enhanced).text
    assert expansion in engine.statement("lexical", {**plain, "expansion_text": "hypertension"}).text
    full = _params(filters={"sources": ["s"]}, include={"neighbours": 2})
    assert engine.statement("hybrid", full) == engine.HYBRID
    assert engine.statement("lexical", {**full, "expansion_text": "x"}) == engine.LEXICAL
    for name in ("lexical", "hybrid", "search"):
        for idle in _subsets(("document_filter", "neighbours", "expansion")):
            statement = engine._variant(name, idle)
            assert "%(" not in statement.text and "/*" not in statement.text
            numbers = {int(n) for n in re.findall(r"\$(\d+)", statement.text)}
            assert numbers == set(range(1, len(statement.names) + 1))


def _subsets(parts):
    from itertools import combinations

    return [frozenset(c) for r in range(len(parts) + 1) for c in combinations(parts, r)]


def test_the_hnsw_walk_orders_by_the_half_precision_index_expression_of_the_embeddings_dimension():
    """The planner walks an expression index only for that very expression: the vector half orders by
    ``embedding::halfvec(<dimension>)`` (infra/migrations/0021), the dimension the embedding's own; the
    candidates are then scored on the full-precision column. Without an embedding (no walk) the text
    names no dimension, and each dimension has a text (and a reused plan) of its own."""
    import numpy as np

    walk = re.compile(r"ORDER BY c\.embedding::halfvec(\(\d+\))? <=> \$\d+::vector::halfvec")
    for name in ("hybrid", "search"):
        with_384 = engine.statement(name, {**_params(), "embedding": np.zeros(384, np.float32)}).text
        assert [m.group(1) for m in walk.finditer(with_384)] == ["(384)"], name
        assert "1 - (c.embedding <=> $" in with_384  # the score: full precision
        with_8 = engine.statement(name, {**_params(), "embedding": np.zeros(8, np.float32)}).text
        assert [m.group(1) for m in walk.finditer(with_8)] == ["(8)"], name
        assert [m.group(1) for m in walk.finditer(engine.statement(name, _params()).text)] == [None], name
    reused = {size: engine.planned_once("search", {**_params(), "embedding": np.zeros(size, np.float32)})
              for size in (384, 8)}
    assert "halfvec(384)" in reused[384].text and "halfvec(8)" in reused[8].text
