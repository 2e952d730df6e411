"""The ONNX Runtime query encoder against the torch model it was exported from (real weights)."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.bindings import onnx_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import ModelMismatchError

TEXTS = [
    "rotate the oncall schedule",
    "what is theraderm used for",
    "Übergrößenträger — naïve café ☕ 東京 résumé",
    "x",
    "long " * 400,  # past the model's 256 tokens: truncated the same way
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    embedder = local_embedder()
    encoder = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=cache)
    return embedder, encoder, cache


def test_same_vectors_as_torch(exported):
    embedder, encoder, _ = exported
    reference = embedder.encode_sync(TEXTS)
    ours = np.stack([encoder.encode([t])[0] for t in TEXTS])
    assert ours.shape == (len(TEXTS), embedder.dimension) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    # a padded batch gives each text the vector it gets alone
    assert np.abs(encoder.encode(TEXTS) - reference).max() < 1e-5


def test_second_load_reuses_the_export(exported, monkeypatch):
    embedder, encoder, cache = exported
    files = sorted(p.name for p in encoder.path.parent.iterdir())
    mtime = encoder.path.stat().st_mtime_ns

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_query, "_export", no_export)
    again = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=cache)
    assert again.path == encoder.path and again.path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in again.path.parent.iterdir()) == files
    assert [p.name for p in again.path.parent.parent.iterdir()] == [again.path.parent.name]  # no scratch left


def test_an_export_that_differs_is_refused(exported, monkeypatch):
    embedder, _, cache = exported
    real = onnx_query.OnnxQueryEncoder.encode
    monkeypatch.setattr(onnx_query.OnnxQueryEncoder, "encode", lambda self, texts: real(self, texts) * 0.99)
    with pytest.raises(ModelMismatchError, match="differs from the model"):
        onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=cache)


async def test_embedder_routes_single_queries_through_onnx(exported, tmp_path):
    embedder, _, _ = exported
    embedder.prepare_queries(cache=tmp_path)  # this process's embedder: a no-op if already prepared
    vector = await embedder.embed_query("rotate the oncall schedule")
    assert np.abs(vector - embedder.encode_sync(["rotate the oncall schedule"])[0]).max() < 1e-5
    assert embedder._queries is not None
