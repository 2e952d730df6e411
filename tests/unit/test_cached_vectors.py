"""loader.cached_vectors: a benchmark's corpus is embedded once per machine, and a cached file is only
reused for the same texts and the same model identity."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.evaluation import loader


class Embed:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(texts)
        return np.array([[len(t), t.count("a"), len(self.calls)] for t in texts], dtype=np.float32)


def test_the_second_call_reads_the_file_and_does_not_embed(tmp_path):
    embed = Embed()
    first = loader.cached_vectors(["alpha", "beta"], embed, tmp_path, identity="model-1")
    second = loader.cached_vectors(["alpha", "beta"], embed, tmp_path, identity="model-1")
    assert len(embed.calls) == 1
    assert np.array_equal(first, second)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial file left


@pytest.mark.parametrize("texts, identity", [(["alpha", "beta"], "model-2"), (["alpha", "gamma"], "model-1"),
                                             (["beta", "alpha"], "model-1"), (["alpha"], "model-1")])
def test_other_texts_or_another_model_are_embedded_again(tmp_path, texts, identity):
    embed = Embed()
    loader.cached_vectors(["alpha", "beta"], embed, tmp_path, identity="model-1")
    vectors = loader.cached_vectors(texts, embed, tmp_path, identity=identity)
    assert embed.calls[-1] == texts and len(embed.calls) == 2
    assert vectors[:, 2].tolist() == [2.0] * len(texts)


def test_an_embedder_that_returns_too_few_vectors_is_refused(tmp_path):
    with pytest.raises(ValueError, match="2 texts"):
        loader.cached_vectors(["alpha", "beta"], lambda texts: np.zeros((1, 3)), tmp_path, identity="m")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["junk bytes", "too few rows"])
def test_a_damaged_file_is_embedded_again_and_replaced(tmp_path, damage):
    embed = Embed()
    loader.cached_vectors(["alpha", "beta"], embed, tmp_path, identity="m")
    [path] = tmp_path.iterdir()
    if damage == "junk bytes":
        path.write_bytes(b"not an array")
    else:
        np.save(path, np.zeros((1, 3), np.float32))
    vectors = loader.cached_vectors(["alpha", "beta"], embed, tmp_path, identity="m")
    assert len(embed.calls) == 2 and vectors.shape == (2, 3)
    assert np.array_equal(np.load(path), vectors)
