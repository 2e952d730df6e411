"""scripts/model_migration.py's check of the answers a migration served: an answer whose vector
scores are another model's than the one it names is counted as mixed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from model_migration import Answer, _cosine, check_answers  # noqa: E402


@pytest.fixture
def vectors():
    # positive components: every cosine is positive, so a score of 0 is never a right angle's
    rng = np.random.default_rng(7)
    chunks = {m: {f"c{i}": rng.random(8).astype(np.float32) for i in range(3)} for m in ("old", "new")}
    queries = {m: {"q": rng.random(8).astype(np.float32)} for m in ("old", "new")}
    return queries, chunks


def _answer(queries, chunks, named: str, scored_by: str | None) -> Answer:
    scores = [(c, round(_cosine(queries[scored_by]["q"], chunks[scored_by][c]), 6) if scored_by else 0.0)
              for c in ("c0", "c1", "c2")]
    return Answer(0.0, 1.0, "q", named, scores)


def test_scores_of_the_named_model_are_vector_answers_and_of_another_mixed(vectors):
    queries, chunks = vectors
    answers = [_answer(queries, chunks, "new", "new"), _answer(queries, chunks, "old", "old"),
               _answer(queries, chunks, "old", "new")]
    assert check_answers(answers, queries, chunks, 0.01)["vector"] + 1 == len(answers)
    assert check_answers(answers[2:], queries, chunks, 0.01)["mixed"] == 1


def test_an_answer_no_vector_scored_is_text_only_and_half_scored_is_mixed(vectors):
    queries, chunks = vectors
    unscored = _answer(queries, chunks, "old", None)
    half = _answer(queries, chunks, "old", "old")
    half.scores[0] = (half.scores[0][0], 0.0)
    checked = check_answers([unscored, half], queries, chunks, 0.01)
    assert (checked["text_only"], checked["mixed"], checked["vector"]) == (1, 1, 0)
