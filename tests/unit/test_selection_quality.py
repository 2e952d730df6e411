"""Selection-quality pieces: joined request words, BM25F fields of a tool, the fixed evaluation split."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.evaluation.selection_split import query_key, split_of
from edgeindex.selection.text import BM25Index, Field
from edgeindex.selection.tools import _fields


def test_words_written_apart_meet_an_identifier_written_together():
    index = BM25Index([[Field("Highschooler", 3.0), Field("name grade")],
                       [Field("school", 3.0), Field("name address")]])
    scores, _ = index.scores("How many high schoolers are there?")
    assert scores[0] > 0 and scores[0] > scores[1]
    assert index.matched("high schoolers", 0) == ["highschool"]


def test_joined_words_skip_stop_words():
    # "of the" must not become a term "ofth..." nor join across a stop word
    index = BM25Index([[Field("ofthe", 1.0)], [Field("other", 1.0)]])
    assert index.scores("one of the rows")[0].tolist() == [0.0, 0.0]


def test_enum_values_are_a_field_of_a_tool():
    row = {"name": "get_weather", "description": "Weather for a city", "category": None, "tags": [],
           "parameters": {"type": "object", "properties": {
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}
    index = BM25Index([_fields(row), _fields({**row, "name": "get_time", "parameters": {}})])
    scores, _ = index.scores("weather in fahrenheit")
    assert "fahrenheit" in index.matched("weather in fahrenheit", 0)
    assert scores[0] > scores[1]


def test_a_name_leaf_counts_more_than_its_namespace():
    # the same words, once as what the tool does (the leaf) and once as whose it is (the namespace)
    def row(name):
        return {"name": name, "description": "", "category": None, "tags": [], "parameters": {}}
    index = BM25Index([_fields(row("weather.get_alerts")), _fields(row("alerts.get_weather")),
                       _fields(row("get_weather_map"))])
    scores, _ = index.scores("get the weather")
    assert scores[1] > scores[0]
    # a name without dots is all leaf: it keeps its words' weight against a dotted one's leaf
    assert scores[2] > scores[0]


def test_the_evaluation_split_is_fixed_and_roughly_even():
    keys = [query_key({"id": f"q{i}", "query": "x"}) for i in range(1000)]
    first = [split_of(k) for k in keys]
    assert first == [split_of(k) for k in keys]          # same in every run and process (a hash, not random)
    assert 400 < first.count("tune") < 600 and first.count("tune") + first.count("held_out") == 1000
    assert query_key({"query": "only text"}) == "only text"


def test_an_entry_is_as_close_as_its_closest_example():
    from edgeindex.selection.scoring import Catalogue

    eye = np.eye(4, dtype=np.float32)
    fields = [[Field(f"tool {i}")] for i in range(3)]
    # owners out of order, owner 0 with two examples: the closer one (eye[3]) must count
    cat = Catalogue([("e", "a"), ("e", "b"), ("e", "c")], eye[:3], fields,
                    example_vectors=np.vstack([eye[1] * 0.2, eye[3] * 0.9, eye[3] * 0.5, eye[3] * 0.1]),
                    example_owner=np.asarray([2, 0, 0, 1]))
    scores = cat.score("tool", eye[3])
    assert scores.vector.tolist() == pytest.approx([0.9, 0.1, 0.0])
