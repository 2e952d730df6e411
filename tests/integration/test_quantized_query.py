"""Tool selection's int8 query encoder (bindings/quantized_query.py) against the fp32 export it is made from
(real weights, real ONNX Runtime quantization)."""

from __future__ import annotations

import asyncio
import shutil
import threading

import numpy as np
import onnxruntime
import pytest
from edgeindex.bindings import onnx_query, quantized_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import BindingError

REQUESTS = [
    "Find the area of a triangle with a base of 10 units and height of 5 units.",
    "Calculate the factorial of 5 using math functions.",
    "Book a table for two at an Italian restaurant in Boston tonight, then send the confirmation to my email.",
    "What's the NPV of a series of cash flows: [-50000, 10000, 15000, 20000, 25000, 30000] at 8%?",
]


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    embedder = local_embedder()
    fp32 = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=cache)
    return embedder, fp32, quantized_query.load(embedder._model, fp32)


def test_int8_vectors_stay_within_the_gate_of_fp32_and_are_really_int8(encoders):
    _, fp32, int8 = encoders
    ours = np.stack([int8.encode([text])[0] for text in REQUESTS])
    reference = np.stack([fp32.encode([text])[0] for text in REQUESTS])
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= quantized_query.MIN_COSINE
    assert cosines.max() < 0.9999   # the quantized graph, not the fp32 one under another name
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    assert int8.path.parent.name.endswith(f"{quantized_query.VARIANT}-ort{onnxruntime.__version__}")


# two texts of one token length: without solo calls, select's length buckets would run them in one call
SAME_LENGTH = ["Book a hotel in Paris for two nights.", "Send an email to Bob about the meeting.",
               "Convert 100 US dollars to euros."]


def test_a_text_gets_the_same_vector_whatever_it_is_sent_with(encoders):
    """Dynamic quantization scales a call's activations over its whole batch, so a text batched with another
    gets another vector (max difference ~0.015 here). Solo calls make each of a request's vectors its own."""
    embedder, _, int8 = encoders
    lengths = [len(embedder._model.tokenizer(text)["input_ids"]) for text in SAME_LENGTH]
    shared = [group for group in onnx_query.length_buckets(lengths) if len(group) > 1]
    assert shared and onnx_query.padded_rows(lengths, onnx_query.length_buckets(lengths)) < onnx_query.WIDE_MIN_ROWS
    for texts in (SAME_LENGTH, REQUESTS):     # one session; two halves at once (REQUESTS: 94 tokens)
        alone = [int8.encode_request([text])[0] for text in texts]
        together = int8.encode_request(texts)
        assert [bool(np.array_equal(a, b)) for a, b in zip(alone, together)] == [True] * len(texts)
        assert np.array_equal(int8.encode(texts), together)
    vectors, clauses = int8.encode_request_spans(REQUESTS, [(0, 38), (38, len(REQUESTS[0]))])
    assert np.array_equal(vectors, int8.encode_request(REQUESTS))
    assert len(clauses) == 2 and all(c is not None for c in clauses)


def test_second_load_reuses_the_quantized_graph(encoders, monkeypatch):
    embedder, fp32, int8 = encoders
    mtime = int8.path.stat().st_mtime_ns

    def no_quantize(*args, **kwargs):
        raise AssertionError("quantized again")

    monkeypatch.setattr(onnx_query, "_write", no_quantize)  # every derived graph is written through it (derived_graph)
    again = quantized_query.load(embedder._model, fp32)
    assert again.path == int8.path and again.path.stat().st_mtime_ns == mtime
    assert again.variant == quantized_query.VARIANT


def test_a_drifted_graph_is_refused_and_selection_stays_on_fp32(encoders, monkeypatch):
    embedder, fp32, _ = encoders
    monkeypatch.setattr(quantized_query, "MIN_COSINE", 1.001)   # no quantized vector can pass this gate
    with pytest.raises(BindingError, match="drifted from fp32"):
        quantized_query.load(embedder._model, fp32)
    embedder.prepare_queries()
    before = embedder.select_graph
    try:
        assert embedder.prepare_select("int8") == "fp32" and embedder.select_graph == "fp32"
        assert asyncio.run(embedder.embed_select(REQUESTS[:1], [])) is None  # select takes the fp32 paths
    finally:
        monkeypatch.undo()
        embedder.prepare_select(before)   # this process's embedder as the other tests found it


def test_an_unfused_export_is_not_quantized(encoders):
    embedder, fp32, _ = encoders
    plain = onnx_query.OnnxQueryEncoder(embedder._model, fp32.path)   # variant: the plain export's
    with pytest.raises(BindingError, match="needs the fused one"):
        quantized_query.load(embedder._model, plain)


def test_a_bad_select_graph_names_the_choices():
    with pytest.raises(BindingError, match="graph: 'fp32' or 'int8'"):
        local_embedder().prepare_select("int4")


def test_processes_starting_together_on_a_fresh_machine_all_get_the_int8_graph(encoders, tmp_path):
    """The search and mcp workers start together and each quantizes the export it found (first start on a
    machine). quantize_dynamic writes a shape-inferred copy beside its input: from the shared export folder,
    one reader took the other's half-written copy and fell back to fp32 (seen on a cold cache)."""
    embedder, fp32, _ = encoders
    fresh = tmp_path / "onnx" / fp32.path.parent.name
    shutil.copytree(fp32.path.parent, fresh)
    reference = onnx_query.OnnxQueryEncoder(embedder._model, fresh / "model.onnx")
    reference.variant = onnx_query.FUSED_VARIANT
    start, results = threading.Barrier(3), []

    def worker():
        start.wait()
        try:
            results.append(quantized_query.load(embedder._model, reference).variant)
        except Exception as exc:  # noqa: BLE001 - the failure is the result
            results.append(repr(exc))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [quantized_query.VARIANT] * 3
    assert sorted(p.name for p in fresh.iterdir()) == ["model.onnx", "variant"]   # nothing written beside it
