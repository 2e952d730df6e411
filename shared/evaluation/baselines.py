"""What users would pick instead: Chroma (vector only), BM25 (keywords only), another embedding model's
vectors of the same chunks (dense, exact), and that model fused with BM25 (reciprocal rank fusion).

Both run in the evaluation process and are timed the way our route is timed by
its client: wall time of one query, start to ranked document ids, including the
work the query needs before the lookup (Chroma: embedding the query with the
same model our search worker uses; BM25: tokenizing and stemming it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import ModelMismatchError

SQL = sqlfiles.load("evaluation.sql")


@dataclass
class ChunkVectors:
    model_id: str
    chunk_ids: list[str]
    document_ids: list[str]
    embeddings: np.ndarray          # (n, dimension) float32, unit length


async def read_chunk_vectors(dsn: str, entity_id: str) -> ChunkVectors:
    """The embeddings the ingest workflow stored for an entity (``chunks.embedding``)."""
    db = Database(dsn, min_size=1, max_size=1, name="EVAL")
    await db.open()
    try:
        rows = await db.fetch(SQL["entity_chunk_vectors"], {"entity_id": entity_id})
    finally:
        await db.close()
    models = {row["model_id"] for row in rows}
    if len(models) > 1:
        raise ModelMismatchError(f"entity {entity_id} holds vectors of several models: {sorted(models)}")
    matrix = np.asarray([row["embedding"].to_numpy() for row in rows], dtype=np.float32)
    return ChunkVectors(models.pop() if models else "", [r["chunk_id"] for r in rows],
                        [r["document_id"] for r in rows], matrix.reshape(len(rows), -1))


async def read_model_vectors(dsn: str, entity_id: str, model_id: str) -> ChunkVectors:
    """Another model's vectors of an entity's chunks, stored beside the serving ones (``chunk_vectors``)."""
    db = Database(dsn, min_size=1, max_size=1, name="EVAL")
    await db.open()
    try:
        rows = await db.fetch(SQL["entity_model_vectors"], {"entity_id": entity_id, "model_id": model_id})
    finally:
        await db.close()
    matrix = np.asarray([row["embedding"].to_numpy() for row in rows], dtype=np.float32)
    return ChunkVectors(model_id, [r["chunk_id"] for r in rows], [r["document_id"] for r in rows],
                        matrix.reshape(len(rows), -1))


class DenseBaseline:
    """Exact cosine over chunk vectors in memory; a document ranks by its best chunk."""

    def __init__(self, vectors: ChunkVectors, embed_query: Callable[[str], np.ndarray]) -> None:
        self._embed_query = embed_query
        self._matrix = vectors.embeddings
        self._documents = np.asarray(vectors.document_ids, dtype=object)

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        scores = self._matrix @ np.asarray(self._embed_query(query), dtype=np.float32)
        ranked = list(dict.fromkeys(self._documents[np.argsort(-scores, kind="stable")]))
        return ranked[:k], (time.perf_counter() - started) * 1000.0


# Reciprocal rank fusion's constant (Cormack et al. 2009) and the depth each list is read to.
RRF_K = 60
RRF_DEPTH = 100


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int, constant: int = RRF_K) -> list[str]:
    """Documents by the sum of 1 / (constant + rank) over the rankings they appear in (rank from 1);
    a tie keeps the order of first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, document_id in enumerate(ranking, start=1):
            scores[document_id] = scores.get(document_id, 0.0) + 1.0 / (constant + rank)
    return sorted(scores, key=lambda d: -scores[d])[:k]


class FusedBaseline:
    """Reciprocal rank fusion of two baselines, each read to ``RRF_DEPTH`` documents."""

    def __init__(self, *parts) -> None:
        self._parts = parts

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        rankings = [part.search(query, max(k, RRF_DEPTH))[0] for part in self._parts]
        return reciprocal_rank_fusion(rankings, k), (time.perf_counter() - started) * 1000.0


class ChromaBaseline:
    """An in-memory Chroma collection (HNSW, cosine space) over the same chunk vectors."""

    name = "chroma"

    def __init__(self, vectors: ChunkVectors, embed_query: Callable[[str], np.ndarray]) -> None:
        import chromadb
        from chromadb.config import Settings

        self._embed_query = embed_query
        self._client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
        # ephemeral clients of one process share their collections: a name of its own
        self._collection = self._client.create_collection(
            f"edgeindex-eval-{uuid.uuid4().hex[:12]}", embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}})
        batch = self._client.get_max_batch_size()
        for start in range(0, len(vectors.chunk_ids), batch):
            end = start + batch
            self._collection.add(ids=vectors.chunk_ids[start:end], embeddings=vectors.embeddings[start:end],
                                 metadatas=[{"document_id": d} for d in vectors.document_ids[start:end]])
        self.size = len(vectors.chunk_ids)

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        vector = self._embed_query(query)
        ranked: list[str] = []
        fetch = min(self.size, k * 4)
        while True:
            # several chunks of one document may rank together: fetch more until k documents
            answer = self._collection.query(query_embeddings=[vector], n_results=fetch, include=["metadatas"])
            ranked = list(dict.fromkeys(m["document_id"] for m in answer["metadatas"][0]))
            if len(ranked) >= k or fetch >= self.size:
                break
            fetch = min(self.size, fetch * 2)
        return ranked[:k], (time.perf_counter() - started) * 1000.0

    def close(self) -> None:
        self._client.delete_collection(self._collection.name)


class BM25Baseline:
    """bm25s (Lucene's BM25 variant, k1=1.5, b=0.75) over whole documents, English stop words and stemmer."""

    name = "bm25"

    def __init__(self, document_ids: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s

        try:
            import Stemmer
        except ImportError:  # PyStemmer is optional; without it BM25 matches surface forms only
            self.stemmer = None
        else:
            self.stemmer = Stemmer.Stemmer("english")
        self._bm25s = bm25s
        self.document_ids = list(document_ids)
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False)
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    @property
    def description(self) -> str:
        return f"bm25s {self._bm25s.__version__}, stemmer: {'snowball english' if self.stemmer else 'none'}"

    def search(self, query: str, k: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        # plain strings, not ids: ids from a second tokenize call would use another vocabulary
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, return_ids=False,
                                      show_progress=False)
        k = min(k, len(self.document_ids))
        indexes, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        # a zero score means no query term matched: a keyword engine returns nothing there
        ranked = [self.document_ids[i] for i, s in zip(indexes[0], scores[0]) if s > 0]
        return ranked, (time.perf_counter() - started) * 1000.0
