"""Which answers shadow mode compares (models/shadow.py): a sampled share, and none once the shadow
model serves (after a cutover there is nothing to compare it with)."""

from __future__ import annotations

from types import SimpleNamespace

from edgeindex.models.shadow import ShadowModel

SHADOW = "intfloat/multilingual-e5-small"


def _shadow(sample: float, draws: list[float]) -> ShadowModel:
    values = iter(draws)
    return ShadowModel(db=None, embedder=SimpleNamespace(model_id=SHADOW), sample=sample,  # type: ignore[arg-type]
                       draw=lambda: next(values))


def test_a_share_of_the_answers_is_compared():
    shadow = _shadow(0.25, [0.1, 0.3, 0.24, 0.9])
    assert [shadow.wanted("mini") for _ in range(4)] == [True, False, True, False]


def test_nothing_is_compared_while_the_shadow_model_serves():
    assert _shadow(1.0, [0.0]).wanted(SHADOW) is False
