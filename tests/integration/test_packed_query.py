"""Query batches packed into one token row (bindings/packed_query.py) on the real model's fused export:
every query gets the vector it gets alone, a graph that mixes queries is refused, and the search
worker's query batcher runs packed."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from edgeindex.bindings import ai, onnx_query, packed_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import BindingError

from ..helpers import QUERY_TEXTS as QUERIES


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    """The process's query encoder (the search worker's) and its packed graph."""
    embedder = local_embedder()
    embedder.prepare_queries(cache=tmp_path_factory.mktemp("cache"))  # a no-op if already prepared
    encoder = embedder._queries
    assert encoder.packed is not None   # prepare_queries packs query batches by default
    return encoder, encoder.packed


class Spy:
    def __init__(self, session) -> None:
        self.session, self.rows = session, []

    def run(self, outputs, feeds):
        self.rows.append(feeds["input_ids"].shape)
        return self.session.run(outputs, feeds)


def test_packed_queries_get_the_vectors_they_get_alone(encoders, monkeypatch):
    encoder, packed = encoders
    spy = Spy(packed._session)
    monkeypatch.setattr(packed, "_session", spy)
    alone = np.concatenate([encoder.encode([text]) for text in QUERIES])
    ours = packed.encode(QUERIES)
    assert ours.shape == alone.shape and ours.dtype == np.float32
    assert np.abs(ours - alone).max() < 1e-5
    # one row per run and no padding: the five short queries before the long one share the first run
    tokens = [len(row) for row in encoder._tokenize(QUERIES)["input_ids"]]
    assert [shape[0] for shape in spy.rows] == [1, 1, 1]
    assert [shape[1] for shape in spy.rows] == [sum(tokens[:5]), tokens[5], sum(tokens[6:])]


def test_a_second_load_reuses_the_packed_graph(encoders, monkeypatch):
    encoder, packed = encoders

    def no_write(*args, **kwargs):
        raise AssertionError("made again")

    monkeypatch.setattr(onnx_query, "_write", no_write)  # every derived graph is written through it (derived_graph)
    assert packed_query.load(encoder).path == packed.path


def test_a_packed_graph_that_lets_queries_attend_to_each_other_is_refused(encoders, monkeypatch, caplog):
    encoder, _ = encoders
    real = packed_query.packed_feeds

    def one_block(ids, types, align=1):
        feeds = real(ids, types, align)
        feeds["packed_mask"][:] = 1   # every token attends to every query's tokens
        return feeds

    monkeypatch.setattr(packed_query, "packed_feeds", one_block)
    with pytest.raises(BindingError, match="differs from the padded one"):
        packed_query.load(encoder)
    with caplog.at_level(logging.WARNING):
        assert ai._packed_or_none(encoder) is None   # the embedder keeps padded batches then
    assert "query batches stay padded" in caplog.text


def test_an_unfused_export_is_not_packed(encoders, monkeypatch):
    encoder, _ = encoders
    monkeypatch.setattr(encoder, "variant", onnx_query.PLAIN_VARIANT)
    with pytest.raises(BindingError, match="packing needs the fused one"):
        packed_query.load(encoder)


async def test_the_query_batcher_runs_packed_with_the_vectors_of_padded_runs(encoders, monkeypatch):
    encoder, _ = encoders
    embedder = local_embedder()
    assert embedder._queries is encoder
    monkeypatch.setattr(encoder, "queries_8bit", None)   # fp32 weights (8-bit: test_query_weights.py)
    spy = Spy(encoder.packed._session)
    monkeypatch.setattr(encoder.packed, "_session", spy)
    texts = QUERIES[:5]
    vectors = encoder.encode_queries(texts)
    assert spy.rows == [(1, sum(len(row) for row in encoder._tokenize(texts)["input_ids"]))]
    assert np.abs(vectors - np.concatenate([encoder.encode([t]) for t in texts])).max() < 1e-5
    assert np.abs(await embedder.embed_query(texts[0]) - vectors[0]).max() < 1e-5


def test_a_long_request_text_runs_on_the_packed_graph_with_the_same_vector_and_clauses(encoders, monkeypatch):
    # tool and index selection's one long text (encode_request): with packing, on the packed graph's
    # two-thread session instead of a padded session of its own, with the same vector and clause vectors
    encoder, packed = encoders
    text = ("I am planning a trip to Paris next month with my family of four, so first book a hotel near the "
            "Louvre for three nights and then convert 5000 Japanese yen to euros at today's rate.")
    spans = [(0, 60), (61, len(text))]
    spy = Spy(packed._session)
    monkeypatch.setattr(packed, "_session", spy)
    vectors, parts = encoder.encode_request_spans([text], spans)
    assert spy.rows == [(1, len(encoder._tokenize([text])["input_ids"][0]))]
    assert spy.rows[0][1] >= onnx_query.WIDE_MIN_ROWS    # long enough for the two-thread path
    assert np.abs(encoder.encode_request([text]) - vectors).max() < 1e-6 and len(spy.rows) == 2
    monkeypatch.setattr(encoder, "packed", None)            # the padded two-thread session, as without packing
    padded_vectors, padded_parts = encoder.encode_request_spans([text], spans)
    assert len(spy.rows) == 2
    assert np.abs(vectors - padded_vectors).max() < 1e-5
    assert len(parts) == 2 and all(p is not None for p in parts)
    assert max(np.abs(a - b).max() for a, b in zip(parts, padded_parts, strict=True)) < 1e-5
