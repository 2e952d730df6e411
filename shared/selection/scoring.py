"""Hybrid scoring of a small catalogue (tools or indices) held in memory.

Each request scores the whole catalogue: cosine of the query to every entry's vector
(or to the closest of its example requests), and BM25 of the query over its fields.
The two are put on one scale by standardising each over the catalogue for this query
(z-scores: how far an entry stands out from the rest) and blended. Standardising is
what makes one threshold hold across embedding models: a model whose cosines all sit
near 0.3 and one whose cosines sit near 0.8 give the same z for an entry that stands
out equally (a fixed cosine cut taken from another model does not transfer).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .text import BM25Index, Field

ALPHA = 0.6            # weight of the vector z-score; 1 - ALPHA goes to BM25 (edgeindex eval --tools sweep)
PRIOR_MAX = 0.75       # most a tool's feedback prior adds, in z units: feedback nudges, never dominates
PRIOR_STRENGTH = 5.0   # pseudo-count: a tool needs several confirmations before its prior grows


@dataclass
class Scores:
    vector: np.ndarray      # cosine (best of entry and its examples)
    text: np.ndarray        # BM25 as a share of what the query's known terms could score (0..1)
    fused: np.ndarray       # alpha * z(vector) + (1 - alpha) * z(bm25) + prior


def zscore(values: np.ndarray) -> np.ndarray:
    if values.size < 2:
        return np.zeros_like(values)
    std = float(values.std())
    if std < 1e-9:
        return np.zeros_like(values)
    return (values - float(values.mean())) / std


def z_cut(cut: float, n: int, share: float = 0.5) -> float:
    """``cut`` for a catalogue of n entries, capped at ``share`` of the largest z-score n scores allow.

    Among n scores no z-score exceeds sqrt(n - 1) (one outlier, the rest equal): a cut made for
    hundreds of entries would otherwise be out of reach in a catalogue of five.
    """
    return min(cut, share * float(np.sqrt(max(n - 1, 1))))


def feedback_prior(used: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Bounded bonus from feedback: smoothed share of the times a tool was used when sent.

    ``used / (shown + PRIOR_STRENGTH)`` stays below 1, so the bonus stays below PRIOR_MAX
    however much feedback arrives; a tool sent often and never used falls back towards 0.
    """
    shown = np.maximum(shown, used)
    return (PRIOR_MAX * used / (shown + PRIOR_STRENGTH)).astype(np.float32)


class ExampleSet:
    """Extra vectors of some entries (example requests, a description alone): an entry is as close as its
    closest one. Held sorted by owner, so one ``reduceat`` takes each owner's best (ufunc.at is slow)."""

    def __init__(self, vectors: np.ndarray, owner: np.ndarray) -> None:
        order = np.argsort(owner, kind="stable")
        self.vectors = np.ascontiguousarray(vectors[order], dtype=np.float32)
        owners = np.asarray(owner)[order]
        self.starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        self.owners = owners[self.starts]

    @classmethod
    def of(cls, vectors: np.ndarray | None, owner: np.ndarray | None) -> ExampleSet | None:
        return cls(vectors, owner) if vectors is not None and len(vectors) else None

    def raise_to_best(self, vector: np.ndarray, query_vector: np.ndarray) -> None:
        best = np.maximum.reduceat(self.vectors @ query_vector, self.starts)
        vector[self.owners] = np.maximum(vector[self.owners], best)


class Catalogue:
    """One scoring structure over the entries of one or more entities.

    ``example_vectors`` come with the definitions; ``learned_vectors`` (and ``prior``) come from
    feedback and are replaced alone by ``with_learned``: a feedback never rebuilds the rest.
    """

    def __init__(self, keys: Sequence[tuple[str, str]], vectors: np.ndarray, fields: Sequence[Sequence[Field]],
                 *, example_vectors: np.ndarray | None = None, example_owner: np.ndarray | None = None,
                 learned_vectors: np.ndarray | None = None, learned_owner: np.ndarray | None = None,
                 prior: np.ndarray | None = None) -> None:
        self.keys = list(keys)
        self.index = {key: i for i, key in enumerate(self.keys)}
        self.size = len(self.keys)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        # (an empty catalogue keeps its (0, d) shape: reshape(0, -1) cannot infer d)
        self.vectors = vectors.reshape(self.size, -1) if self.size else vectors.reshape(0, vectors.shape[-1])
        self.bm25 = BM25Index(fields)
        self.examples = ExampleSet.of(example_vectors, example_owner)
        self.learned = ExampleSet.of(learned_vectors, learned_owner)
        self.prior = prior if prior is not None else np.zeros(self.size, np.float32)

    def with_learned(self, learned_vectors: np.ndarray | None, learned_owner: np.ndarray | None,
                     prior: np.ndarray) -> Catalogue:
        """The same catalogue (vectors, BM25 and definition examples shared, not copied) with new feedback."""
        other = copy.copy(self)
        other.learned = ExampleSet.of(learned_vectors, learned_owner)
        other.prior = prior
        return other

    def score(self, query: str, query_vector: np.ndarray, *, alpha: float = ALPHA) -> Scores:
        query_vector = query_vector.astype(np.float32)
        vector = self.vectors @ query_vector
        for extra in (self.examples, self.learned):
            if extra is not None:   # an entry is as close as its closest example request
                extra.raise_to_best(vector, query_vector)
        bm25, best = self.bm25.scores(query)
        text = np.minimum(bm25 / best, 1.0) if best > 0 else np.zeros(self.size, np.float32)
        fused = alpha * zscore(vector) + (1 - alpha) * zscore(bm25) + self.prior
        return Scores(vector, text.astype(np.float32), fused.astype(np.float32))
