"""Query enhancement's pure parts: the gates, the synonym parser, the request option, the eval modes."""

from __future__ import annotations

import pytest
from edgeindex.errors import ValidationError
from edgeindex.evaluation.modes import split_mode, valid_mode
from edgeindex.search.cache_keys import cache_keys
from edgeindex.search.engine import LexicalResult
from edgeindex.search.enhance import gates
from edgeindex.search.enhance.llm import parse_synonyms
from edgeindex.search.request import parse_request


def lexical(*scores: float) -> LexicalResult:
    return LexicalResult(nonempty=True, exact=True, entity_ids=["e"] * len(scores), ids=list(range(len(scores))),
                         text=list(scores), trigram=[0.0] * len(scores))


def test_evidence_takes_the_best_first_pass_score():
    e = gates.evidence("rotate the oncall schedule", lexical(0.1, 0.3, 0.2))
    assert (e.words, e.top, e.matched, e.quoted) == (4, 0.3, 3, False)


def test_prf_gate_needs_chunks_to_learn_from():
    assert gates.prf(gates.evidence("x", lexical())) == "no first-pass match"
    assert gates.prf(gates.evidence("x", lexical(0.2)), max_top=0.5) is None
    assert gates.prf(gates.evidence("x", lexical(0.6)), max_top=0.5).startswith("first pass strong")


def test_llm_gate():
    weak = lexical(0.1)
    assert gates.llm(gates.evidence("how do we rotate oncall", weak)) is None
    assert gates.llm(gates.evidence("how do we rotate oncall", lexical(0.9))).startswith("first pass strong")
    assert gates.llm(gates.evidence("invoice 4711", weak)) == "identifiers"
    assert gates.llm(gates.evidence('"exact phrase" here', weak)) == "quoted phrase"
    assert gates.llm(gates.evidence(" ".join(["word"] * 20), weak)).startswith("query length")


def test_synonyms_are_parsed_from_lines_bullets_and_commas():
    text = "1. car\n- automobile, motor vehicle\n* Car\n\n\"auto\""
    assert parse_synonyms(text) == ["car", "automobile", "motor vehicle", "auto"]
    assert parse_synonyms("") == []


def test_enhance_option_is_validated_and_part_of_the_cache_key():
    parse = lambda body: parse_request({"query": "q", **body}, max_k=100, max_query_chars=100)  # noqa: E731
    assert parse({}).enhance == "auto"
    assert parse({"enhance": ["prf", "hyde"]}).enhance == ["prf", "hyde"]
    for bad in (["magic"], "prf", 1, ["prf"] * 4):
        with pytest.raises(ValidationError) as info:
            parse({"enhance": bad})
        assert info.value.field.startswith("enhance")
    keys = {cache_keys(parse({"enhance": e}), ["a"]).exact for e in ("auto", "none", ["prf"], ["synonyms"])}
    assert len(keys) == 4


def test_eval_modes_name_enhancements():
    assert split_mode("text+prf") == ("text", ["prf"])
    assert split_mode("hybrid+synonyms+hyde") == ("hybrid", ["synonyms", "hyde"])
    assert split_mode("hybrid+none") == ("hybrid", "none")
    assert split_mode("vector") == ("vector", None)
    assert all(map(valid_mode, ("text", "text+prf", "hybrid+none", "vector+hyde")))
    assert not any(map(valid_mode, ("text+magic", "auto+prf+", "hybrid+none+prf", "fast")))
