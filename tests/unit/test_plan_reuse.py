"""Literals written into the search statement by search/plan_reuse.py."""

from __future__ import annotations

from edgeindex.search import plan_reuse


def test_literals_mean_what_the_parameters_meant():
    """Each literal carries the type psycopg declares for the parameter (a float stays float8, so
    arithmetic on it is not numeric), and text is quoted: an entity id cannot end the literal."""
    assert plan_reuse.literal(0.5) == "0.5::float8"
    assert plan_reuse.literal(10) == "10::int2"
    assert plan_reuse.literal(True) == "true::bool"
    assert plan_reuse.literal(None) == "NULL"
    assert plan_reuse.literal([1.0, 0.5]) == "'{1.0,0.5}'::float8[]"
    assert plan_reuse.literal(["a'b", "c"]) == "'{a''b,c}'"
    statement = plan_reuse.build("SELECT %(entity_ids)s::text[], %(query)s, %(embedding)s, 1 %% 2, %(query)s",
                                 {"entity_ids": ["x%(query)s"], "query": "q", "embedding": None})
    assert statement.text == "SELECT '{x%(query)s}'::text[], $1, $2, 1 % 2, $1"
    assert statement.names == ("query", "embedding")
