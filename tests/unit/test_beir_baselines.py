"""The baselines on small hand-made corpora: BM25 (bm25s + stemmer) and Chroma over given vectors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("bm25s", reason="the baselines belong to the [eval] extra")
pytest.importorskip("chromadb", reason="the baselines belong to the [eval] extra")

from edgeindex.evaluation.baselines import BM25Baseline, ChromaBaseline, ChunkVectors  # noqa: E402


def test_bm25_ranks_by_stemmed_terms_and_returns_nothing_without_a_match():
    ids = ["cats", "dogs", "birds"]
    texts = ["The cat purrs loudly when cats are happy.", "A dog barks at the mailman.",
             "Birds fly south for the winter."]
    bm25 = BM25Baseline(ids, texts)
    assert bm25.stemmer is not None, "PyStemmer belongs to the eval extra"
    ranked, elapsed_ms = bm25.search("purring cat", 10)
    assert ranked == ["cats"]                 # 'purring' and 'purrs' share a stem; zero scores are dropped
    assert elapsed_ms > 0
    assert bm25.search("barking dogs", 2)[0] == ["dogs"]
    assert bm25.search("quantum chromodynamics", 10)[0] == []


def _unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_chroma_dedupes_chunks_into_documents_and_fetches_more_when_one_document_dominates():
    # ten chunks of document A all lie closer to the query than B's and C's single chunks
    rng = np.random.default_rng(3)
    query = _unit([1, 0, 0, 0])
    a_chunks = [_unit([1, *(0.01 * rng.standard_normal(3))]) for _ in range(10)]
    vectors = ChunkVectors("m", [f"a{i}" for i in range(10)] + ["b0", "c0"], ["A"] * 10 + ["B", "C"],
                           np.stack(a_chunks + [_unit([0.6, 0.8, 0, 0]), _unit([0, 0, 0, 1])]))
    embedded: list[str] = []

    def embed(text: str) -> np.ndarray:
        embedded.append(text)
        return query

    chroma = ChromaBaseline(vectors, embed)
    try:
        ranked, elapsed_ms = chroma.search("anything", 2)
        assert ranked == ["A", "B"]               # k * 4 = 8 chunks were all A's: it fetched more
        assert embedded == ["anything"]           # the query embedding is inside the timed call
        assert elapsed_ms > 0
        assert chroma.search("anything", 5)[0] == ["A", "B", "C"]   # fewer documents than k exist
    finally:
        chroma.close()
