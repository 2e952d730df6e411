"""Search queries on 8-bit weights (bindings/query_weights.py) on the real model: a query gets the vector it
gets alone whatever it is batched with, close to fp32; a graph that fails either check is refused and
queries stay on fp32; the search worker's query batcher and its cache keys use it by default."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from edgeindex.bindings import ai, onnx_query, query_weights
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import BindingError

from ..helpers import QUERY_TEXTS

QUERIES = [*QUERY_TEXTS, "a b"]   # with "a b", every length modulo 4 occurs


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    """The process's query encoder (the search worker's), prepared with the default weights."""
    embedder = local_embedder()
    embedder.prepare_queries(cache=tmp_path_factory.mktemp("cache"))  # a no-op if already prepared
    assert embedder._queries.queries_8bit is not None   # 8-bit is the default
    return embedder._queries


def test_a_query_gets_the_same_8bit_vector_whatever_it_is_batched_with(encoder):
    queries = encoder.queries_8bit
    lengths = [len(row) for row in encoder._tokenize(QUERIES)["input_ids"]]
    assert len({n % query_weights.ALIGN for n in lengths}) == query_weights.ALIGN  # every misalignment occurs
    alone = np.concatenate([queries.encode([text]) for text in QUERIES])
    for shift in range(len(QUERIES)):
        order = QUERIES[shift:] + QUERIES[:shift]
        together = queries.encode(order)
        assert np.array_equal(together, alone[[(i + shift) % len(QUERIES) for i in range(len(QUERIES))]])


def test_8bit_vectors_stay_close_to_fp32(encoder):
    ours = encoder.queries_8bit.encode(QUERIES)
    fp32 = np.concatenate([encoder.encode([text]) for text in QUERIES])
    cosines = np.sum(ours * fp32, axis=1)
    assert cosines.min() >= query_weights.MIN_COSINE and cosines.max() < 1 - 1e-6  # close, yet not fp32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)


async def test_the_query_batcher_embeds_on_8bit_weights_and_the_cache_keys_say_so(encoder):
    embedder = local_embedder()
    assert embedder._queries is encoder
    vectors = encoder.encode_queries(QUERIES[:4])
    assert np.array_equal(vectors, encoder.queries_8bit.encode(QUERIES[:4]))
    assert np.array_equal(await embedder.embed_query(QUERIES[0]), vectors[0])
    assert np.array_equal(embedder.encode_query_sync(QUERIES[1]), vectors[1])  # the evaluation's baselines
    assert embedder.query_vectors == query_weights.VARIANT


def test_a_graph_that_moves_a_query_with_its_batch_mates_is_refused(encoder, monkeypatch, caplog):
    monkeypatch.setattr(query_weights, "ALIGN", 1)    # rows unaligned: what the 8-bit MatMuls are not exact for
    with pytest.raises(BindingError, match="moves by .* with its batch-mates"):
        query_weights.load(encoder)
    with caplog.at_level(logging.WARNING):
        assert ai._query_weights_or_none(encoder) is None   # the embedder keeps queries on fp32 then
    assert "search queries stay on fp32 weights" in caplog.text


def test_a_graph_too_far_from_fp32_is_refused(encoder, monkeypatch):
    real = encoder.packed.encode
    monkeypatch.setattr(encoder.packed, "encode", lambda texts: np.roll(real(texts), 1, axis=1))
    with pytest.raises(BindingError, match="cosine .* of fp32"):
        query_weights.load(encoder)


def test_a_second_load_reuses_the_8bit_graph(encoder, monkeypatch):
    def no_write(*args, **kwargs):
        raise AssertionError("made again")

    monkeypatch.setattr(onnx_query, "_write", no_write)  # every derived graph is written through it
    assert query_weights.load(encoder).path == encoder.queries_8bit.path
