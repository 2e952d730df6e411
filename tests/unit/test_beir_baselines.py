"""The baselines on small hand-made corpora: BM25 (bm25s + stemmer) and Chroma over given vectors."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("bm25s", reason="the baselines belong to the [eval] extra")
pytest.importorskip("chromadb", reason="the baselines belong to the [eval] extra")

from edgeindex.evaluation.baselines import (  # noqa: E402
    BM25Baseline,
    ChromaBaseline,
    ChunkVectors,
    DenseBaseline,
    reciprocal_rank_fusion,
)


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


def test_reciprocal_rank_fusion_sums_one_over_sixty_plus_rank_across_the_rankings():
    # a: 1/61 + 1/62 = 0.03252, c: 1/63 + 1/61 = 0.03227, b: 1/62 = 0.01613, d: 1/64
    assert reciprocal_rank_fusion([["a", "b", "c", "d"], ["c", "a"]], k=10) == ["a", "c", "b", "d"]
    assert reciprocal_rank_fusion([["a", "b", "c", "d"], ["c", "a"]], k=2) == ["a", "c"]
    # the constant is 60: first in one list (1/61) loses to 61st in two (2/121) and beats 63rd in two (2/123)
    for rank, first in ((61, "both"), (63, "one")):
        fillers = [[f"{side}{i}" for i in range(rank - 1)] for side in "fg"]
        ranked = reciprocal_rank_fusion([["one", *fillers[0][1:], "both"], [*fillers[1], "both"]], k=200)
        assert ranked.index("both") < ranked.index("one") if first == "both" else ranked.index("one") < ranked.index("both")


def test_dense_search_ranks_a_document_by_its_best_chunk():
    unit = np.eye(3, dtype=np.float32)
    # doc x: one chunk along the query (cosine 1), one opposite (-1): its mean, 0, is under doc y's 0.6
    query = unit[0]
    vectors = ChunkVectors("m", ["x1", "x2", "y1"], ["x", "x", "y"],
                           np.stack([unit[0], -unit[0], 0.6 * unit[0] + 0.8 * unit[1]]))
    ranked, elapsed = DenseBaseline(vectors, lambda text: query).search("anything", 5)
    assert ranked == ["x", "y"] and elapsed >= 0
