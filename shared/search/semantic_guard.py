"""When two similar queries are still different questions.

A semantic cache serves a past result for a query whose embedding is close enough.
Embeddings barely move when a number or an identifier changes ("invoice 4711" and
"invoice 4712" are 0.99 alike), so closeness alone would answer the wrong question.
The *signature* of a query is what must match exactly for a semantic hit: numbers,
identifiers (``ERR_42``, ``v1.2.3``, ``a/b``, ``user@host``), quoted phrases and
words the embedding model has no token for (names, codes, rare terms — the model
splits them into pieces, so it cannot tell them apart reliably either).
"""

from __future__ import annotations

import re
from collections.abc import Container

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|'([^']{2,})'")
_TOKEN = re.compile(r"\w+(?:[-_./:#@+]\w+)*")
_DIGIT = re.compile(r"\d")
_WORD_START = "\u2581"  # SentencePiece's mark of a piece that begins a word
_JOINER = re.compile(r"[-_./:#@+]")


def signature(query: str, vocabulary: Container[str] | None = None) -> str:
    """The parts of a (normalized) query that a semantic hit must share exactly, as one string."""
    exact: set[str] = set()
    for match in _QUOTED.finditer(query):
        exact.add('"' + next(g for g in match.groups() if g) + '"')
    for token in _TOKEN.findall(query):
        if _DIGIT.search(token) or _JOINER.search(token):
            exact.add(token)
        elif vocabulary is not None and token.isalpha() and len(token) > 3 and token not in vocabulary:
            exact.add(token)
    return "\x1f".join(sorted(exact))


def model_vocabulary(embedder) -> frozenset[str] | None:
    """Whole words the embedding model knows, when it has a tokenizer, case-folded: WordPiece entries
    without ``##``; a SentencePiece vocabulary's word-initial pieces (``▁word``), without the marker."""
    try:
        tokenizer = embedder.tokenizer()
    except Exception:  # a remote model: no vocabulary to judge rare words by
        return None
    if tokenizer is None:
        return None
    vocabulary = tokenizer.get_vocab()
    if any(w.startswith(_WORD_START) for w in vocabulary):
        return frozenset(w[1:].casefold() for w in vocabulary if w.startswith(_WORD_START) and w[1:].isalpha())
    return frozenset(w for w in vocabulary if w.isalpha())
