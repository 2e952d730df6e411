"""The fast loader with given vectors (load_search.py's real-embedding workload): each chunk gets the
vector of its own text, in the order ``synthetic_texts`` gives, and vectors that do not fit are refused
before anything is written."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from edgeindex.evaluation import loader

MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
TEXTS = [f"Passage number {i} about topic {i * 7 % 13}. It has a second sentence {i}." for i in range(9)]


def _vectors(count: int) -> np.ndarray:
    return loader.random_unit_vectors(np.random.default_rng(11), count, DIMENSION)


async def test_each_chunk_stores_the_vector_given_for_its_text(db):
    entity = f"vectors-{uuid.uuid4().hex[:8]}"
    chunks = 13  # more than the texts: the repeats are variants with vectors of their own
    texts = loader.synthetic_texts(TEXTS, chunks)
    assert len(set(texts)) == chunks
    vectors = _vectors(chunks)
    assert await loader.load_synthetic(db, entity, TEXTS, chunks, model_id=MODEL_ID, dimension=DIMENSION,
                                       vectors=vectors, batch_documents=2) == chunks
    rows = await db.fetch("SELECT content, embedding::text AS embedding FROM chunks WHERE entity_id = %(e)s",
                          {"e": entity})
    stored = {row["content"]: np.array(row["embedding"].strip("[]").split(","), dtype=np.float32) for row in rows}
    assert sorted(stored) == sorted(texts)
    for index, text in enumerate(texts):
        assert np.allclose(stored[text], vectors[index], atol=1e-6), (index, text)


async def test_vectors_that_do_not_fit_are_refused_before_writing(db):
    entity = f"vectors-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ValueError, match="12 chunks"):
        await loader.load_synthetic(db, entity, TEXTS, 12, model_id=MODEL_ID, dimension=DIMENSION,
                                    vectors=_vectors(11))
    assert await db.fetch("SELECT 1 FROM documents WHERE entity_id = %(e)s", {"e": entity}) == []
