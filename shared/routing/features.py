"""Features the router decides from, all cheap (tens of microseconds together).

Two kinds:

- the query itself: length, digit and identifier share, quoted phrases, how badly the embedding
  model's tokenizer fragments it (and how much of it is written in scripts the local model was
  not trained on: its vectors are noise there);
- first-pass evidence from the lexical statement, which ran while the query was embedded: the
  entity's own term statistics (best IDF, rare-term share, how many query terms any chunk holds)
  and the BM25 scores it found (best share of the ideal score, gap to the next);
- whether the embedding model can represent this query at all, in terms that carry over to
  languages no training set had: the languages the model declares (``AIService.languages``:
  all-MiniLM-L6-v2 knows English; a multilingual provider declares ``*``) against the query's
  detected language and the stored language of the best BM25 chunks; and the query vector's
  cosine to those same chunks (the lexical statement returns their vectors: the "probe"), which
  is flat when the model cannot tell texts of that language apart.

Every feature is in 0..1 (or a small bounded number), so weights compare across features.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import language

NAMES = (
    "length",          # log2(1 + words) / 5: 1 word 0.2, 31 words 1.0
    "short",           # 1 for one or two words
    "digit_share",     # words holding a digit
    "identifier_share",  # words like err_42, v1.2.3, a/b, user@host, abc123
    "quoted",          # a quoted phrase
    "question",        # starts with a question word or ends with "?" (paraphrase-like)
    "oov_share",       # words the model has no whole-word token for
    "fragmentation",   # 1 - words / word pieces: how much the tokenizer cuts the query
    "foreign_script",  # letters outside Latin script (the local model is English-only)
    "matched_share",   # query terms some chunk in scope holds
    "rare_share",      # matched terms held by at most 1% of chunks
    "best_idf",        # the rarest matched term's idf / ln(1 + chunks)
    "bm25_best",       # best chunk's BM25 as a share of what a chunk holding every term would score
    "bm25_gap",        # (best - second) / best
    "lexical_hits",    # log(1 + chunks BM25 found) / log(1 + candidates)
    "query_language_unknown",  # the detector's confidence that the query is in a language the model does not know
    "scope_language_unknown",  # share of the best BM25 chunks stored in a language the model does not know
    "probe_cosine",    # the query vector's best cosine to the best BM25 chunks
    "probe_spread",    # best - worst of those cosines: flat when the model cannot tell the texts apart
    "unk_share",       # word pieces that are the tokenizer's unknown token
)
PROBE = 5               # best BM25 chunks the lexical statement returns with their language and vector
UNKNOWN_TOKENS = frozenset({"[UNK]", "<unk>", "<UNK>"})

_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”")
_WORD = re.compile(r"\w+(?:[-_./:#@+]\w+)*")
_DIGIT = re.compile(r"\d")
_JOINER = re.compile(r"[-_./:#@+]")
_QUESTION = re.compile(r"^(what|who|whom|whose|when|where|why|how|which|is|are|does|do|can|should|was|were|"
                       r"wie|was|wer|wann|wo|warum|welche|welcher|quel|quelle|qué|cómo|dónde|cuál)\b")


@dataclass(frozen=True)
class Evidence:
    """What the lexical statement says about the query in this scope (all zero without it)."""

    terms: int = 0          # distinct query terms after stemming / stop words
    matched: int = 0        # of those, held by some chunk in scope
    rare: int = 0           # held by at most 1% of the chunks
    best_idf: float = 0.0   # the rarest matched term's idf ...
    chunks: float = 0.0     # ... among this many chunks
    scores: tuple[float, ...] = ()  # the best chunks' BM25 shares, best first
    candidates: int = 1     # how many chunks the statement may return
    languages: tuple[str | None, ...] = ()   # the probe: the best chunks' stored languages ...
    vectors: tuple[bytes, ...] = ()          # ... and vectors (pgvector's binary form), best first

    @classmethod
    def from_lexical(cls, stats: dict[str, Any] | None, text: list[float], trigram: list[float],
                     candidates: int, languages=(), vectors=()) -> Evidence:
        stats = stats or {}
        scores = tuple(sorted((float(a) + float(b) for a, b in zip(text, trigram, strict=False)), reverse=True))
        return cls(terms=int(stats.get("terms") or 0), matched=int(stats.get("matched") or 0),
                   rare=int(stats.get("rare") or 0), best_idf=float(stats.get("best_idf") or 0.0),
                   chunks=float(stats.get("chunks") or 0.0), scores=scores, candidates=max(candidates, 1),
                   languages=tuple(languages), vectors=tuple(vectors))


def query_features(query: str, tokenizer: Any | None, vocabulary: Container[str] | None) -> dict[str, float]:
    """The features of the query text alone. ``query`` is the normalized (case-folded) query; the
    original casing is gone, so camelCase shows only through digits and joiners."""
    words = _WORD.findall(query)
    n = max(len(words), 1)
    letters = [ch for ch in query if ch.isalpha()]
    foreign = sum(1 for ch in letters if not _latin(ch)) / len(letters) if letters and tokenizer is not None else 0.0
    oov = fragmentation = unk = 0.0
    if vocabulary is not None and words:
        alpha_words = [w for w in words if w.isalpha() and _latin(w[0])]
        if alpha_words:
            oov = sum(1 for w in alpha_words if w not in vocabulary) / len(alpha_words)
    if tokenizer is not None and words:
        tokens = tokenizer.encode(query, add_special_tokens=False).tokens
        pieces = len(tokens)
        fragmentation = max(0.0, 1.0 - len(words) / pieces) if pieces else 0.0
        # a script the vocabulary lacks comes out as unknown tokens, whatever the language
        unk = sum(1 for t in tokens if t in UNKNOWN_TOKENS) / pieces if pieces else 0.0
    return {
        "length": min(math.log2(1 + len(words)) / 5, 1.0),
        "short": 1.0 if len(words) <= 2 else 0.0,
        "digit_share": sum(1 for w in words if _DIGIT.search(w)) / n,
        "identifier_share": sum(1 for w in words if _JOINER.search(w) or _mixed(w)) / n,
        "quoted": 1.0 if _QUOTED.search(query) else 0.0,
        "question": 1.0 if query.endswith("?") or _QUESTION.match(query) else 0.0,
        "oov_share": oov,
        "fragmentation": fragmentation,
        "foreign_script": foreign,
        "unk_share": unk,
    }


def evidence_features(evidence: Evidence) -> dict[str, float]:
    scores = evidence.scores
    best = scores[0] if scores else 0.0
    second = scores[1] if len(scores) > 1 else 0.0
    return {
        "matched_share": evidence.matched / evidence.terms if evidence.terms else 0.0,
        "rare_share": evidence.rare / evidence.matched if evidence.matched else 0.0,
        "best_idf": min(evidence.best_idf / math.log(1 + evidence.chunks), 1.0) if evidence.chunks > 0 else 0.0,
        "bm25_best": min(best, 1.0),
        "bm25_gap": (best - second) / best if best > 0 else 0.0,
        "lexical_hits": min(math.log1p(len(scores)) / math.log1p(evidence.candidates), 1.0),
    }


def model_features(query: str, tokenizer: Any | None, evidence: Evidence, embedding: Any | None,
                   languages: Container[str] | None) -> dict[str, float]:
    """How well the embedding model can represent this query and the chunks full text found for it.

    ``languages``: the ISO 639-1 codes the model was trained on (``None`` or holding ``*``: any
    language, so nothing is unknown). A chunk stored without a language was indexed as
    ``language.DEFAULT_LANGUAGE``."""
    multilingual = languages is None or "*" in languages
    query_unknown = scope_unknown = 0.0
    if not multilingual:
        found = language.detect(query)
        if found.language is not None and found.language not in languages:
            query_unknown = found.confidence
        if evidence.languages:
            scope_unknown = sum(1 for code in evidence.languages
                                if (code or language.DEFAULT_LANGUAGE) not in languages) / len(evidence.languages)
    cosine = spread = 0.0
    if embedding is not None and evidence.vectors:
        cosines = probe_cosines(embedding, evidence.vectors)
        if cosines.size:
            cosine, spread = float(cosines.max()), float(cosines.max() - cosines.min())
    return {"query_language_unknown": query_unknown, "scope_language_unknown": scope_unknown,
            "probe_cosine": max(cosine, 0.0), "probe_spread": spread}


def probe_cosines(embedding: Any, vectors: tuple[bytes, ...]) -> np.ndarray:
    """Cosines of the query vector to the probe's vectors (pgvector's binary form: int16 dimension,
    int16 unused, then big-endian float4s); a vector of another dimension is left out."""
    query = np.asarray(embedding, dtype=np.float32)
    width = 4 + 4 * query.shape[0]
    rows = [v for v in vectors if len(v) == width]
    if not rows:
        return np.zeros(0, dtype=np.float32)
    # one decode for all: each row's 4-byte header takes exactly one float4 column, dropped
    matrix = np.frombuffer(b"".join(rows), dtype=">f4").reshape(len(rows), -1)[:, 1:].astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    return (matrix @ query) / np.where(norms > 0, norms, 1.0)


def features(query: str, tokenizer: Any | None, vocabulary: Container[str] | None,
             evidence: Evidence, *, embedding: Any | None = None,
             languages: Container[str] | None = None) -> dict[str, float]:
    values = {**query_features(query, tokenizer, vocabulary), **evidence_features(evidence),
              **model_features(query, tokenizer, evidence, embedding, languages)}
    return {name: round(float(values[name]), 4) for name in NAMES}


def _mixed(word: str) -> bool:
    """Letters and digits in one word: ABC123, 4xx, sha256."""
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)


def _latin(ch: str) -> bool:
    if ch.isascii():
        return True
    try:
        return unicodedata.name(ch).startswith("LATIN")
    except ValueError:
        return False
