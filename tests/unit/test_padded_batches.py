"""Ingestion's ONNX batches (onnx_query.padded_batches): a call's texts cut into the batches that cost least."""

from __future__ import annotations

import itertools

from edgeindex.bindings import onnx_query
from hypothesis import given, settings
from hypothesis import strategies as st


def cost(lengths: list[int], batches: list[list[int]], run_tokens: int) -> int:
    return sum(run_tokens + len(b) * max(lengths[i] for i in b) for b in batches)


def brute_force(lengths: list[int], max_rows: int, run_tokens: int, max_tokens: int) -> int:
    """The cheapest cut of the length-sorted texts, by trying every set of cut points."""
    ordered = sorted(lengths)
    n, best = len(ordered), None
    for cuts in itertools.product((False, True), repeat=max(0, n - 1)):
        bounds = [0, *[i + 1 for i, cut in enumerate(cuts) if cut], n]
        batches = [ordered[a:b] for a, b in itertools.pairwise(bounds)]
        if any(len(b) > max_rows or (len(b) > 1 and len(b) * b[-1] > max_tokens) for b in batches):
            continue
        total = sum(run_tokens + len(b) * b[-1] for b in batches)
        best = total if best is None else min(best, total)
    return best


@settings(max_examples=300, deadline=None)
@given(lengths=st.lists(st.integers(1, 256), max_size=10), max_rows=st.integers(1, 8),
       run_tokens=st.integers(0, 64), max_tokens=st.integers(1, 1024))
def test_batches_cost_least_and_keep_every_text_once(lengths, max_rows, run_tokens, max_tokens):
    batches = onnx_query.padded_batches(lengths, max_rows, run_tokens=run_tokens, max_tokens=max_tokens)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    # consecutive in length order, so a batch pads as little as its lengths allow
    assert [lengths[i] for b in batches for i in b] == sorted(lengths)
    for b in batches:
        assert len(b) <= max_rows
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= max_tokens
    if lengths:
        assert cost(lengths, batches, run_tokens) == brute_force(lengths, max_rows, run_tokens, max_tokens)


def test_short_and_long_texts_are_not_padded_together():
    # six short texts and two long ones, in batches of at most 8: one batch of 8 in length order would pad
    # the six short ones to 180 tokens
    lengths = [12] * 3 + [180, 14] + [13] * 2 + [175]
    batches = onnx_query.padded_batches(lengths, 8)
    long = {3, 7}
    assert any(set(b) == long for b in batches)
    assert all(not (set(b) & long) or set(b) == long for b in batches)
    assert max(len(b) for b in batches) <= 8


def test_long_texts_run_in_small_batches():
    # ~200-token chunks: a batch may hold BATCH_MAX_TOKENS padded tokens, so two a run, never eight
    batches = onnx_query.padded_batches([200] * 8, 8)
    assert [len(b) for b in batches] == [2, 2, 2, 2]
    assert onnx_query.padded_batches([300, 20], 8) == [[1], [0]]  # one text over the budget runs alone
    assert onnx_query.padded_batches([], 8) == []
