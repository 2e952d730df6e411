"""Packing a query batch into one token row (bindings/packed_query.py): which texts share a run, the
block-diagonal mask and restarted positions a run feeds, and the pooling of each text's own rows."""

from __future__ import annotations

import numpy as np
from edgeindex.bindings.packed_query import packed_feeds, packs, pooled, starts
from hypothesis import given
from hypothesis import strategies as st

lengths_lists = st.lists(st.integers(min_value=1, max_value=300), max_size=40)


@given(lengths_lists, st.integers(min_value=1, max_value=256))
def test_runs_keep_every_text_once_in_order_within_the_token_bound(lengths, max_tokens):
    runs = packs(lengths, max_tokens)
    assert [i for run in runs for i in run] == list(range(len(lengths)))
    for run in runs:
        assert len(run) == 1 or sum(lengths[i] for i in run) <= max_tokens
    # greedy: a run ends only because the next text would not fit
    for run, following in zip(runs, runs[1:]):
        assert sum(lengths[i] for i in run) + lengths[following[0]] > max_tokens


def test_short_queries_share_a_run_and_a_long_one_runs_alone():
    assert packs([9, 12, 7], 128) == [[0, 1, 2]]
    assert packs([9, 200, 7], 128) == [[0], [1], [2]]
    assert packs([60, 60, 60], 128) == [[0, 1], [2]]


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=8))
def test_a_run_lets_each_token_attend_to_its_own_text_only_and_counts_positions_from_zero(lengths):
    ids = [[100 * t + j for j in range(length)] for t, length in enumerate(lengths)]
    types = [[t % 2] * length for t, length in enumerate(lengths)]
    feeds = packed_feeds(ids, types)
    owner = [t for t, length in enumerate(lengths) for _ in range(length)]
    total = len(owner)
    assert feeds["input_ids"].tolist() == [[token for row in ids for token in row]]
    assert feeds["token_type_ids"].tolist() == [[kind for row in types for kind in row]]
    assert feeds["position_ids"].tolist() == [[j for length in lengths for j in range(length)]]
    expected = [[int(owner[a] == owner[b]) for b in range(total)] for a in range(total)]
    assert feeds["packed_mask"].shape == (1, total, total) and feeds["packed_mask"][0].tolist() == expected
    assert feeds["packed_mask"].dtype == np.int32 and feeds["position_ids"].dtype == np.int32


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_each_text_is_the_unit_mean_of_its_own_rows(lengths, seed):
    tokens = np.random.default_rng(seed).normal(size=(sum(lengths), 5)).astype(np.float32)
    vectors = pooled(tokens, lengths)
    start = 0
    for row, length in enumerate(lengths):
        mean = tokens[start:start + length].mean(axis=0)
        assert np.allclose(vectors[row], mean / np.linalg.norm(mean), atol=1e-5)
        start += length
    assert vectors.shape == (len(lengths), 5) and vectors.dtype == np.float32


@given(st.lists(st.integers(min_value=1, max_value=40), max_size=12), st.sampled_from([1, 2, 4, 8]))
def test_aligned_texts_start_at_multiples_of_the_alignment_in_order_without_overlap(lengths, align):
    begins, total = starts(lengths, align)
    assert len(begins) == len(lengths)
    assert [b % align for b in begins] == [0] * len(lengths)
    ends = [b + n for b, n in zip(begins, lengths)]
    assert begins[:1] in ([], [0])
    # each text starts at the first aligned row after the one before it: the fewest gap rows
    assert [b - e for b, e in zip(begins[1:], ends)] == [(-n) % align for n in lengths[:-1]]
    assert total == (ends[-1] if lengths else 0)


@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6))
def test_gap_rows_attend_to_themselves_and_no_text_attends_to_them(lengths):
    ids = [[100 * (t + 1) + j for j in range(length)] for t, length in enumerate(lengths)]
    types = [[t % 2] * length for t, length in enumerate(lengths)]
    feeds = packed_feeds(ids, types, 4)
    begins, total = starts(lengths, 4)
    owner = [-1] * total        # -1: a gap row
    for t, (b, n) in enumerate(zip(begins, lengths)):
        owner[b:b + n] = [t] * n
    expected = [[int(a == b if owner[a] < 0 or owner[b] < 0 else owner[a] == owner[b]) for b in range(total)]
                for a in range(total)]
    assert feeds["packed_mask"].shape == (1, total, total) and feeds["packed_mask"][0].tolist() == expected
    assert feeds["input_ids"][0].tolist() == [ids[o][r - begins[o]] if o >= 0 else 0 for r, o in enumerate(owner)]
    assert feeds["position_ids"][0].tolist() == [r - begins[o] if o >= 0 else 0 for r, o in enumerate(owner)]
    assert feeds["token_type_ids"][0].tolist() == [types[o][0] if o >= 0 else 0 for o in owner]


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_aligned_pooling_skips_the_gap_rows(lengths, seed):
    begins, total = starts(lengths, 4)
    tokens = np.random.default_rng(seed).normal(size=(total, 5)).astype(np.float32)
    vectors = pooled(tokens, lengths, 4)
    for row, (b, n) in enumerate(zip(begins, lengths)):
        mean = tokens[b:b + n].mean(axis=0)
        assert np.allclose(vectors[row], mean / np.linalg.norm(mean), atol=1e-5)
