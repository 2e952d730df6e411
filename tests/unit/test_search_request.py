"""Search request parsing, query normalization, cache keys and SQL parameters (no services)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from edgeindex.errors import ValidationError
from edgeindex.search import defaults, engine
from edgeindex.search.cache_keys import cache_keys
from edgeindex.search.request import normalize_query, parse_request


def parse(body: dict, **limits):
    return parse_request(body, max_k=limits.get("max_k", 100), max_query_chars=limits.get("max_query_chars", 2000))


def test_defaults():
    r = parse({"query": "Hello"})
    assert (r.k, r.alpha, r.fusion, r.dedupe, r.cache) == (defaults.K, defaults.ALPHA, defaults.FUSION, False, True)
    assert r.include.text and not r.include.summary and r.include.neighbours == 0


def test_query_is_normalized():
    assert normalize_query("  Ünïcode\tQUERY\n\x00with  spaces ") == "ünïcode query with spaces"
    assert normalize_query("ﬁle") == "file"  # NFKC folds ligatures
    assert parse({"query": "  How   DO I\tbake "}).query == "how do i bake"


@pytest.mark.parametrize("body,field,words", [
    ({"query": "x", "k": 101}, "k", "MAX_K"),
    ({"query": "x" * 51}, "query", "MAX_QUERY_CHARS"),
    ({"query": "x", "typo": 1}, "typo", "unknown field"),
    ({"query": "x", "include": {"vectors": True}}, "include.vectors", "unknown field"),
    ({"query": "x", "k": True}, "k", "integer"),
    ({"query": "x", "alpha": float("nan")}, "alpha", ""),
    ({"query": "x", "filters": {"document_ids": ["a", "b\x01c"]}}, "filters.document_ids.1", "control characters"),
    ({"query": "x", "filters": {"document_ids": ["é" * 300]}}, "filters.document_ids.0", "at most 512 bytes"),
    ({"query": "x", "filters": {"updated_after": "2026-05-01", "updated_before": "2026-04-01"}}, "filters",
     "updated_after must be earlier than updated_before"),
    ({}, "query", "required"),
])
def test_errors_name_the_field(body, field, words):
    with pytest.raises(ValidationError) as err:
        parse(body, max_query_chars=50)
    assert err.value.field == field and err.value.status == 400
    assert words in err.value.message


def test_limits_come_from_the_deployment():
    assert parse({"query": "x", "k": 7}, max_k=7).k == 7
    with pytest.raises(ValidationError):
        parse({"query": "x", "k": 8}, max_k=7)


def test_neighbours_accepts_a_boolean():
    assert parse({"query": "x", "include": {"neighbours": True}}).include.neighbours == 1
    assert parse({"query": "x", "include": {"neighbours": 2}}).include.neighbours == 2


def test_filters_are_canonical():
    r = parse({"query": "x", "filters": {"tags": ["b", "a", "b"], "created_after": "2026-01-01T01:00:00+01:00",
                                         "updated_before": "2026-02-01T00:00:00",
                                         "exclude_chunk_ids": ["6F9619FF-8B86-D011-B42D-00C04FC964FF"]}})
    f = r.filters.normalized()
    assert f["tags"] == ["a", "b"]
    assert f["created_after"] == datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    assert f["updated_before"] == "2026-02-01T00:00:00+00:00"  # no offset: UTC, not server-local
    assert f["exclude_chunk_ids"] == ["6f9619ff-8b86-d011-b42d-00c04fc964ff"]
    assert f["sources"] is None


def test_cache_keys():
    base = parse({"query": "how to bake", "filters": {"tags": ["a", "b"]}})
    same = parse({"query": "  HOW to   bake", "filters": {"tags": ["b", "a"]}, "cache": False})
    keys = cache_keys(base, ["e2", "e1"])
    assert cache_keys(same, ["e1", "e2", "e1"]) == keys  # order, case, spacing, the cache flag do not matter
    paraphrase = cache_keys(parse({"query": "how do i bake", "filters": {"tags": ["a", "b"]}}), ["e1", "e2"])
    assert paraphrase.namespace == keys.namespace and paraphrase.exact != keys.exact
    for other in ({"query": "how to bake", "k": 3, "filters": {"tags": ["a", "b"]}},
                  {"query": "how to bake", "filters": {"tags": ["a"]}},
                  {"query": "how to bake", "filters": {"tags": ["a", "b"]}, "include": {"text": False}},
                  {"query": "how to bake", "filters": {"tags": ["a", "b"]}, "alpha": 0.1}):
        changed = cache_keys(parse(other), ["e1", "e2"])
        assert changed.namespace != keys.namespace and changed.exact != keys.exact
    assert cache_keys(base, ["e1"]).namespace != keys.namespace
    # another query graph (fp32 or 8-bit weights: bindings/query_weights.py) ranks near-ties differently
    eight = cache_keys(base, ["e1", "e2"], "packed-8bit")
    assert eight.namespace != keys.namespace and eight.exact != keys.exact
    assert cache_keys(same, ["e2", "e1"], "packed-8bit") == eight


def test_candidate_count():
    assert engine.candidate_count(10, dedupe=False) == max(defaults.MIN_CANDIDATES, 10 * defaults.CANDIDATE_FACTOR)
    assert engine.candidate_count(10, dedupe=True) >= engine.candidate_count(10, dedupe=False)
    assert engine.candidate_count(100, dedupe=True) <= defaults.MAX_CANDIDATES
    assert engine.candidate_count(5000, dedupe=False) == 5000  # never fewer than k


def test_sql_params():
    r = parse({"query": "autovacum", "alpha": 0, "filters": {"sources": ["wiki"]}})
    p = engine.build_params(r, ["b", "a"], np.zeros(384, np.float32), limit=10)
    assert p["entity_ids"] == ["a", "b"]
    assert (p["use_vector"], p["use_text"], p["use_trigram"], p["document_filters"]) == (False, True, True, True)
    p = engine.build_params(parse({"query": "x " * 40, "alpha": 1}), ["a"], np.zeros(384, np.float32), limit=10)
    assert (p["use_vector"], p["use_text"], p["use_trigram"], p["document_filters"]) == (True, False, False, False)
    p = engine.build_params(parse({"query": "!!! ???", "alpha": 0.5}), ["a"], np.zeros(384, np.float32), limit=10)
    assert (p["use_text"], p["use_trigram"]) == (False, False)  # nothing for full text to look for
    p = engine.build_params(parse({"query": "a b", "text_mode": "websearch"}), ["a"], np.zeros(384, np.float32),
                            limit=10)
    assert (p["use_text"], p["use_trigram"], p["websearch"]) == (True, False, True)
    # every placeholder of the two statements gets a value ...
    import re
    lexical = engine.LexicalResult(nonempty=True, exact=False)
    p = engine.build_params(parse({"query": "a b"}), ["a"], np.zeros(384, np.float32), limit=10, lexical=lexical)
    names = set(re.findall(r"%\((\w+)\)s", engine.LEXICAL_SQL)) | set(re.findall(r"%\((\w+)\)s", engine.HYBRID_SQL))
    assert names <= set(p), names - set(p)
    assert set(p) <= names, set(p) - names  # and nothing is passed that the statements ignore
    # ... and the lexical statement, which runs before the embedding exists, does not use it
    assert "embedding" not in re.findall(r"%\((\w+)\)s", engine.LEXICAL_SQL)
    assert engine.build_params(parse({"query": "a b"}), ["a"], None, limit=10)["embedding"] is None


def test_entities_default_to_the_grant_and_admins_must_name_them():
    from edgeindex.errors import Forbidden
    from edgeindex.tenancy import Principal, resolve_entities

    user = Principal("k1", False, frozenset({"u1", "g1"}))
    assert resolve_entities(user, None) == ["g1", "u1"]
    assert resolve_entities(user, ["u1", "u1"]) == ["u1"]
    with pytest.raises(Forbidden) as err:
        resolve_entities(user, ["u1", "u2"])
    assert "'u2'" in err.value.message and err.value.field == "entity_ids"
    admin = Principal("admin", True, frozenset())
    assert resolve_entities(admin, ["x"]) == ["x"]
    with pytest.raises(ValidationError) as err:
        resolve_entities(admin, None)
    assert err.value.field == "entity_ids"


def test_collections_are_canonical_in_the_cache_key_and_reach_the_sql():
    one = parse_request({"query": "x", "collections": ["b", "a", "b"]}, max_k=100, max_query_chars=100)
    two = parse_request({"query": "x", "collections": ["a", "b"]}, max_k=100, max_query_chars=100)
    auto = parse_request({"query": "x", "collections": "auto"}, max_k=100, max_query_chars=100)
    none = parse_request({"query": "x"}, max_k=100, max_query_chars=100)
    keys = [cache_keys(r, ["e"]).exact for r in (one, two, auto, none)]
    assert keys[0] == keys[1] and len(set(keys[1:])) == 3
    params = engine.build_params(one, ["e"], None, limit=5)
    assert params["collections"] == ["a", "b"] and params["document_filters"] is True
    # "auto" is resolved by the search's collections stage; unresolved it filters nothing
    assert engine.build_params(auto, ["e"], None, limit=5)["collections"] is None
    assert engine.build_params(none, ["e"], None, limit=5)["document_filters"] is False
