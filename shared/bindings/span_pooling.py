"""Vectors of parts of a text from the text's own forward pass.

all-MiniLM-L6-v2's vector of a text is the unit mean of its contextual token vectors (the graph's
``token_embeddings``, [CLS] and [SEP] included). The unit mean over only the tokens of a part (a
clause of a tool-selection request), picked by the tokenizer's character offsets, is a vector for
that part that costs no model time: the part's tokens saw the whole text, so it is not the vector the
part gets alone (cosine ~0.74 mean on tools-bfcl's clauses), but it
scores like one for picking a clause's tool. The mean over every token row is the text's own vector.
"""

from __future__ import annotations

import numpy as np


def unit_mean(tokens: np.ndarray) -> np.ndarray | None:
    """The L2-normalised mean of token rows (the model's pooling); None for no rows."""
    if not len(tokens):
        return None
    mean = tokens.mean(0, dtype=np.float32)
    norm = float(np.linalg.norm(mean))
    return (mean / max(norm, 1e-12)).astype(np.float32)


def span_rows(offsets: list[tuple[int, int]], start: int, end: int) -> list[int]:
    """Token rows wholly inside the characters [start, end); special tokens (empty offsets) never."""
    return [row for row, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]


def span_vectors(tokens: np.ndarray, offsets: list[tuple[int, int]],
                 spans: list[tuple[int, int]]) -> list[np.ndarray | None]:
    """One unit vector per character span of the text whose token vectors (one row per token, as the
    tokenizer's ``offsets``) are ``tokens``; None for a span with no token (past the model's truncation)."""
    return [unit_mean(tokens[span_rows(offsets, start, end)]) for start, end in spans]
