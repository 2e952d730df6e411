"""The search statements as raw queries: converted once, parameters passed in the right order."""

from __future__ import annotations

import re

import pytest
from edgeindex.search import engine
from edgeindex.search.service import routed_keys
from edgeindex.search.cache_keys import CacheKeys
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
