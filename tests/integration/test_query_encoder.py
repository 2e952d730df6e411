"""The ONNX Runtime query encoder against the torch model it was exported from (real weights)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from edgeindex.bindings import onnx_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.errors import BindingError, ModelMismatchError

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

    monkeypatch.setattr(onnx_query, "_write", no_export)  # every export (fused or plain) is written through it
    again = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=cache)
    assert again.path == encoder.path and again.path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in again.path.parent.iterdir()) == files
    assert onnx_query.export_variant(again.path.parent) == onnx_query.FUSED_VARIANT  # this machine fuses
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
    assert embedder._queries is not None
    # the query batcher's graph (8-bit weights by default: test_query_weights.py), close to torch's vector
    assert np.array_equal(vector, embedder._queries.encode_queries(["rotate the oncall schedule"])[0])
    assert float(vector @ embedder.encode_sync(["rotate the oncall schedule"])[0]) > 0.999


def test_a_requests_texts_get_their_own_vectors_in_length_buckets(exported):
    # tool selection embeds a request and its sentences together: batched by length (padding
    # less), on two threads once the call is large, each text still gets the vector it gets alone
    embedder, encoder, _ = exported
    short = ["rotate the oncall schedule", "x"]
    assert np.abs(encoder.encode_request(short) - embedder.encode_sync(short)).max() < 1e-5
    assert encoder._wide is None  # a small call stays on the one-thread session
    request = ["Book a hotel in Paris for three nights. Then convert 5000 yen to euros. Also find a "
               "vegetarian restaurant near the Louvre for Saturday evening, for four people.",
               "Book a hotel in Paris for three nights.", "Then convert 5000 yen to euros.", *TEXTS]
    ours = encoder.encode_request(request)
    assert ours.shape == (len(request), embedder.dimension)
    assert np.abs(ours - embedder.encode_sync(request)).max() < 1e-5
    assert encoder._second is not None   # a large call of several texts: two halves (the next test)
    long_text = [request[0] * 2]
    assert np.abs(encoder.encode_request(long_text) - embedder.encode_sync(long_text)).max() < 1e-5
    assert encoder._wide is not None     # one long text: two intra-op threads


def test_a_long_requests_texts_run_as_two_halves_at_once(exported, monkeypatch):
    # a long request and its sentences (tool selection's tail) are cut in two halves of about equal tokens,
    # one on this thread's session and one on the other ONNX session's own thread; every text still gets the
    # vector it gets alone, and the request's clause vectors come from its own token rows
    embedder, encoder, _ = exported
    request = ("I am planning a trip to Paris next month with my family of four. First, book a hotel near the "
               "Louvre for three nights starting on the twelfth. Then convert 5000 Japanese yen to euros at "
               "today's rate. Also find a vegetarian restaurant near the hotel for Saturday evening.")
    sentences = ["I am planning a trip to Paris next month with my family of four.",
                 "First, book a hotel near the Louvre for three nights starting on the twelfth.",
                 "Then convert 5000 Japanese yen to euros at today's rate.",
                 "Also find a vegetarian restaurant near the hotel for Saturday evening."]
    texts = [request, *sentences]
    session, executor = encoder.second_session()
    seen = []

    class Recording:
        def run(self, outputs, feeds):
            seen.append((threading.current_thread().name, feeds["input_ids"].shape[0]))
            return session.run(outputs, feeds)

    monkeypatch.setattr(encoder, "_second", (Recording(), executor))
    clause = (request.index("book"), request.index(" for three"))
    vectors, parts = encoder.encode_request_spans(texts, [clause])
    assert np.abs(vectors - embedder.encode_sync(texts)).max() < 1e-5
    # the request (the longest text) on one half, its four sentences on the other, on the other thread
    assert [n for name, n in seen if name.startswith("onnx-query-half")] and sum(n for _, n in seen) == 4
    _, tokens, offsets = encoder.encode_tokens(request)
    from edgeindex.bindings.span_pooling import span_vectors
    assert np.abs(parts[0] - span_vectors(tokens, offsets, [clause])[0]).max() < 1e-5


def test_halves_balance_tokens():
    assert onnx_query.halves([60, 14, 17, 12, 15]) == [[0], [1, 2, 3, 4]]   # the request apart from its sentences
    assert onnx_query.halves([30, 28, 10, 9]) == [[0, 3], [1, 2]]
    assert onnx_query.halves([25]) == [[0]]


def test_length_buckets_pad_least():
    lengths = [40, 9, 12, 38, 11]
    groups = onnx_query.length_buckets(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert groups == [[1, 4, 2], [3, 0]]  # short sentences apart from the long texts
    assert onnx_query.length_buckets([20]) == [[0]] and onnx_query.length_buckets([]) == []
    assert onnx_query.length_buckets([10, 10, 10]) == [[0, 1, 2]]  # nothing to gain from a cut


def test_the_export_is_fused_and_the_torch_model_keeps_its_attention(exported):
    # ONNX Runtime's BERT fusions (one Attention op per layer) need the TorchScript export with eager
    # attention; the loaded model goes on serving ingestion with its own attention implementation
    embedder, encoder, _ = exported
    assert encoder.variant == onnx_query.FUSED_VARIANT
    assert onnx_query.export_variant(encoder.path.parent) == onnx_query.FUSED_VARIANT
    import onnx

    ops = {node.op_type for node in onnx.load(str(encoder.path), load_external_data=False).graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    assert embedder._model[0].auto_model.config._attn_implementation != "eager"


def test_a_failed_fusion_falls_back_to_the_plain_export(tmp_path, monkeypatch, caplog):
    embedder = local_embedder()

    def no_fusion(model, scratch):
        (scratch / "plain.onnx").write_bytes(b"half written")  # a failure may leave files behind
        raise ImportError("no onnxruntime.transformers here")

    monkeypatch.setattr(onnx_query, "_export_fused", no_fusion)
    with caplog.at_level("INFO", logger=onnx_query.__name__):
        encoder = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=tmp_path)
    assert encoder.variant == onnx_query.PLAIN_VARIANT
    assert not (encoder.path.parent / "plain.onnx").exists()
    assert "fused query encoder export failed" in caplog.text and "query encoder: dynamo export" in caplog.text
    reference = embedder.encode_sync(TEXTS)
    assert np.abs(encoder.encode(TEXTS) - reference).max() < 1e-5


def test_a_fusion_that_changes_the_vectors_falls_back_to_the_plain_export(tmp_path, monkeypatch, caplog):
    embedder = local_embedder()
    real, calls = onnx_query._largest_difference, []

    def fused_graph_is_off(model, path):  # the first check is the fused graph's, inside its export
        calls.append(path)
        return 1.0 if len(calls) == 1 else real(model, path)

    monkeypatch.setattr(onnx_query, "_largest_difference", fused_graph_is_off)
    with caplog.at_level("INFO", logger=onnx_query.__name__):
        encoder = onnx_query.OnnxQueryEncoder.load(embedder._model, embedder.model_dir, cache=tmp_path)
    assert encoder.variant == onnx_query.PLAIN_VARIANT  # not a refusal to start: the plain export serves
    assert "the fused graph differs from the model" in caplog.text
    assert np.abs(encoder.encode(TEXTS) - embedder.encode_sync(TEXTS)).max() < 1e-5


def test_pooling_a_requests_token_vectors_gives_its_vector(exported):
    # the graph's second output is the token vectors its pooled vector is the unit mean of: pooled over
    # every row (the whole request) they give that vector, and a clause's span pools its own rows
    embedder, encoder, _ = exported
    from edgeindex.bindings.span_pooling import span_rows, span_vectors, unit_mean

    request = ("Find the weather forecast in Paris for Saturday, and then book a hotel room near the Louvre. "
               "Also convert 500 US dollars to euros.")
    for text in [request, *TEXTS]:
        pooled, tokens, offsets = encoder.encode_tokens(text)
        assert tokens.shape == (len(offsets), embedder.dimension)
        assert np.abs(unit_mean(tokens) - pooled).max() < 1e-6
        assert np.abs(pooled - encoder.encode([text])[0]).max() < 1e-6
    _, tokens, offsets = encoder.encode_tokens(request)
    clause = (request.index("book"), request.index(" near"))   # "book a hotel room"
    assert [request[offsets[r][0]:offsets[r][1]] for r in span_rows(offsets, *clause)] == ["book", "a", "hotel",
                                                                                          "room"]
    # inside select's call (the request beside its sentences, padded in length buckets) the same vectors
    texts = [request, "Also convert 500 US dollars to euros."]
    vectors, parts = encoder.encode_request_spans(texts, [clause, (0, len(request))])
    assert np.abs(vectors - encoder.encode_request(texts)).max() == 0
    assert np.abs(parts[0] - span_vectors(tokens, offsets, [clause])[0]).max() < 1e-5
    assert np.abs(parts[1] - unit_mean(tokens[1:-1])).max() < 1e-5   # every token but [CLS] and [SEP]


def test_batches_on_onnx_give_each_text_torch_s_vector_in_the_caller_s_order(exported):
    # on ONNX (the ingest worker): a call's texts are sorted by token count and run in
    # batches of batch_size; every row must still be the vector of the text at that position
    embedder, _, cache = exported
    texts = [f"{word} " * n for n, word in ((30, "alpha"), (3, "beta"), (120, "gamma"), (1, "delta"), (300, "eps"),
                                             (12, "zeta"), (60, "eta"), (2, "theta"), (45, "iota"))] + TEXTS
    reference = embedder.encode_sync(texts)
    before = embedder.batch_size
    try:
        embedder.set_batch_size(4)  # several batches, each of texts from all over the call
        embedder.run_batches_on("onnx", cache=cache)
        assert embedder._batches is not None
        ours = embedder.encode_sync(texts)
        alone = embedder.encode_sync(texts[2:3])
    finally:
        embedder.run_batches_on("torch")
        embedder.set_batch_size(before)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.abs(alone[0] - reference[2]).max() < 1e-5
    with pytest.raises(BindingError, match="batches run on"):
        embedder.run_batches_on("tensorflow")


def test_searches_and_selections_tokenizing_at_once_get_the_vectors_they_get_alone(exported):
    """The search worker embeds a search's queries (encode, padded batch) on the query batcher's
    thread while a selection's request (encode_request, unpadded) runs on another. A tokenizer
    shared between them keeps its padding setting in the Rust tokenizer, set by each call: two
    calls at once once handed a batch unpadded rows (a 500 in the isolation fuzz test)."""
    _, encoder, _ = exported
    batch, request = TEXTS[:4], ["Book a hotel in Paris for three nights.", "x", "convert 5000 yen to euros"]
    alone = encoder.encode(batch), encoder.encode_request(request)
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def repeat(call, texts, expected) -> None:
        start.wait()
        try:
            for _ in range(300):
                assert np.abs(call(texts) - expected).max() < 1e-5
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's call
            failures.append(exc)

    threads = [threading.Thread(target=repeat, args=(encoder.encode, batch, alone[0])),
               threading.Thread(target=repeat, args=(encoder.encode_request, request, alone[1]))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the GIL over between any two steps: the race shows every run
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures, failures


def test_every_query_batch_runs_on_two_threads_with_the_same_vectors(exported, monkeypatch):
    """The query batcher's calls (encode_queries): one query and several alike on the two-thread session,
    each text with the vector it gets alone."""
    embedder, encoder, _ = exported
    runs: list[str] = []

    class Spy:
        def __init__(self, session, name: str) -> None:
            self.session, self.name = session, name

        def run(self, *args, **kwargs):
            runs.append(self.name)
            return self.session.run(*args, **kwargs)

    monkeypatch.setattr(encoder, "_session", Spy(encoder._session, "one"))
    monkeypatch.setattr(encoder, "_wide", Spy(encoder.wide_session(), "wide"))
    texts = TEXTS[:4]
    reference = embedder.encode_sync(texts)
    assert np.abs(encoder.encode_queries(texts[:1]) - reference[:1]).max() < 1e-5
    assert runs == ["wide"]
    assert np.abs(encoder.encode_queries(texts) - reference).max() < 1e-5
    assert runs == ["wide", "wide"]
