"""The semantic cache's in-process tier (search/local_semantic_cache.py): the pointers this process stored,
searched exactly, within their namespace, signature and expiry, and bounded in number."""

from __future__ import annotations

import time

import numpy as np
from edgeindex.search.local_semantic_cache import LocalSemanticCache
from hypothesis import given, settings
from hypothesis import strategies as st

LATER = time.time() + 3600


def unit(*components: float) -> np.ndarray:
    vector = np.zeros(4, dtype=np.float32)
    vector[:len(components)] = components
    return vector / np.linalg.norm(vector)


def test_the_nearest_pointers_above_the_threshold_come_first():
    local = LocalSemanticCache(max_vectors=100)
    local.remember("ns", "far", unit(0, 1), "s", LATER)
    local.remember("ns", "near", unit(1, 0.1), "s", LATER)
    local.remember("ns", "nearer", unit(1, 0.01), "s", LATER)
    assert local.nearest("ns", unit(1), min_score=0.9, signature="s", k=3) == ["nearer", "near"]
    assert local.nearest("ns", unit(1), min_score=0.9, signature="s", k=1) == ["nearer"]
    # not normalized: cosine all the same
    assert local.nearest("ns", 5 * unit(1), min_score=0.9, signature="s", k=3) == ["nearer", "near"]
    assert local.nearest("ns", unit(1), min_score=0.9999, signature="s", k=3) == ["nearer"]


def test_another_namespace_signature_or_an_expired_pointer_never_matches():
    local = LocalSemanticCache(max_vectors=100)
    local.remember("ns", "invoice 4711", unit(1), "4711", LATER)
    local.remember("ns", "gone", unit(1), "s", time.time() - 1)
    assert local.nearest("ns", unit(1), min_score=0.5, signature="4712", k=3) == []
    assert local.nearest("ns", unit(1), min_score=0.5, signature="s", k=3) == []
    assert local.nearest("other", unit(1), min_score=0.5, signature="4711", k=3) == []
    assert local.nearest("ns", unit(1), min_score=0.5, signature="4711", k=3) == ["invoice 4711"]


def test_a_key_stored_again_replaces_its_pointer_and_a_forgotten_one_is_gone():
    local = LocalSemanticCache(max_vectors=100)
    local.remember("ns", "key", unit(1), "s", LATER)
    local.remember("ns", "key", unit(0, 1), "s", LATER)
    assert len(local) == 1
    assert local.nearest("ns", unit(1), min_score=0.5, signature="s", k=3) == []
    assert local.nearest("ns", unit(0, 1), min_score=0.5, signature="s", k=3) == ["key"]
    local.forget("key")
    local.forget("key")   # twice: nothing left to forget
    assert len(local) == 0 and local.nearest("ns", unit(0, 1), min_score=0.5, signature="s", k=3) == []


def test_the_least_recently_searched_namespace_goes_first_at_the_bound():
    local = LocalSemanticCache(max_vectors=4)
    local.remember("a", "a1", unit(1), "s", LATER)
    local.remember("a", "a2", unit(1, 1), "s", LATER)
    local.remember("b", "b1", unit(1), "s", LATER)
    local.remember("c", "c1", unit(1), "s", LATER)
    assert local.nearest("a", unit(1), min_score=0.5, signature="s", k=3) == ["a1", "a2"]   # a searched: b is oldest
    local.remember("c", "c2", unit(0, 1), "s", LATER)
    assert len(local) == 4
    assert local.nearest("b", unit(1), min_score=0.5, signature="s", k=3) == []
    assert local.nearest("a", unit(1), min_score=0.5, signature="s", k=3) == ["a1", "a2"]
    assert local.nearest("c", unit(0, 1), min_score=0.5, signature="s", k=3) == ["c2"]


def test_a_namespace_alone_at_the_bound_overwrites_its_oldest_pointers():
    local = LocalSemanticCache(max_vectors=3)
    for i in range(5):
        local.remember("ns", f"k{i}", unit(1, i / 100), "s", LATER)
    assert len(local) == 3
    assert sorted(local.nearest("ns", unit(1), min_score=0.5, signature="s", k=10)) == ["k2", "k3", "k4"]


def test_a_forgotten_pointers_row_is_taken_again_and_the_oldest_goes_at_the_bound():
    local = LocalSemanticCache(max_vectors=2)
    local.remember("ns", "a", unit(1), "s", LATER)
    local.remember("ns", "b", unit(1, 0.1), "s", LATER)
    local.forget("a")
    local.remember("ns", "c", unit(1, 0.2), "s", LATER)   # into a's row
    local.remember("ns", "d", unit(1, 0.3), "s", LATER)   # b is the oldest now
    assert local.nearest("ns", unit(1), min_score=0.5, signature="s", k=3) == ["c", "d"]


def test_off_at_zero():
    local = LocalSemanticCache(max_vectors=0)
    local.remember("ns", "key", unit(1), "s", LATER)
    assert len(local) == 0 and local.nearest("ns", unit(1), min_score=0.5, signature="s", k=3) == []


operations = st.lists(st.tuples(
    st.sampled_from(["remember", "forget", "nearest"]),
    st.sampled_from(["a", "b", "c"]),                 # namespace
    st.integers(0, 11),                               # key
    st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any),   # vector
    st.sampled_from(["s", "t"])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops=operations, bound=st.integers(1, 14))
def test_answers_as_a_brute_force_search_of_what_it_still_holds(ops, bound):
    """Against a plain dict of the pointers: every answer is exactly a brute-force search of the
    pointers remembered, not forgotten and not displaced by the bound; the bound always holds; and
    with room for everything, nothing is ever displaced."""
    local = LocalSemanticCache(max_vectors=bound)
    model: dict[str, tuple[str, np.ndarray, str]] = {}   # key -> (namespace, unit vector, signature)
    ever: set[str] = set()   # every key remembered at some point
    for op, namespace, key_number, components, sig in ops:
        key, vector = f"k{key_number}", np.array(components, dtype=np.float32)
        if op == "remember":
            local.remember(namespace, key, vector, sig, LATER)
            model[key] = (namespace, vector / np.linalg.norm(vector), sig)
            ever.add(key)
        elif op == "forget":
            local.forget(key)
            model.pop(key, None)
        else:
            found = local.nearest(namespace, vector, min_score=0.3, signature=sig, k=3)
            query = vector / np.linalg.norm(vector)
            scores = {k: float(v @ query) for k, (ns, v, s) in model.items()
                      if k in local._where and ns == namespace and s == sig}
            # float32 rounding may put a score within 1e-5 of the threshold, or of a tie, either way
            strict = {k for k, score in scores.items() if score >= 0.3 + 1e-5}
            loose = {k for k, score in scores.items() if score >= 0.3 - 1e-5}
            assert len(set(found)) == len(found) and set(found) <= loose
            assert min(3, len(strict)) <= len(found) <= 3
            assert all(scores[a] >= scores[b] - 1e-5 for a, b in zip(found, found[1:]))   # nearest first
            if len(found) < 3:
                assert strict <= set(found)
            else:   # no key left out is nearer than one returned
                assert all(scores[k] <= scores[found[-1]] + 1e-5 for k in loose - set(found))
        assert len(local) <= bound
        assert set(local._where) <= set(model)   # never a pointer forgotten or never stored
        if len(ever) <= bound:   # room for every key ever stored: none displaced
            assert set(local._where) == set(model)
