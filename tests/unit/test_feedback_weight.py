"""One key's feedback weighs as much as any other key's in a router step, however much it sends."""

from __future__ import annotations

import numpy as np
from edgeindex.routing.service import per_key_mean


def test_a_key_that_judges_nineteen_searches_weighs_as_much_as_one_that_judges_one():
    loud, quiet = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    mean = per_key_mean([loud] * 19 + [quiet], ["k1"] * 19 + ["k2"])
    assert np.allclose(mean, [0.5, 0.5])


def test_each_keys_own_judgements_are_averaged():
    mean = per_key_mean([np.array([2.0]), np.array([0.0]), np.array([4.0])], ["a", "a", "b"])
    assert np.allclose(mean, [2.5])  # a: 1.0, b: 4.0
