"""Words of identifiers and prose, and a small BM25 index for catalogues held in memory.

Tool and index catalogues are small (tens to a few thousand entries) and are scored
whole for every request, so the index is a dense-per-query, sparse-in-store matrix of
precomputed BM25 weights: a query is a sum of a few columns. Identifiers are split the
way people write them (``get_order_details``, ``math.hypot``, ``getOrderDetails``,
``HTTPServer2``) so a request's words meet a tool's name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import sparse

# camelCase and digit boundaries: "getHTTPResponse2xx" -> get HTTP Response 2 xx
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)   # letters and digits of any script; `_ . -` and the rest split

# Function words carry no choice between tools; the list is short on purpose (English only:
# other languages keep all their words, which BM25's idf already discounts).
STOPWORDS = frozenset("""
a an and are as at be but by can could do does for from had has have how i if in into is it its
me my of on or our please should so than that the their them then there these this those to
us was we were what when where which who whom why will with would you your
""".split())


@lru_cache(maxsize=1)
def _stemmer():
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is a dependency; plain words still work
        return None
    return Stemmer.Stemmer("english")


def split_identifier(text: str) -> list[str]:
    """Words of an identifier or a sentence, lower-cased, without stemming."""
    words: list[str] = []
    for raw in _WORD.findall(text):
        words.extend(part.lower() for part in _CAMEL.split(raw) if part)
    return words


@lru_cache(maxsize=8192)
def terms(text: str) -> tuple[str, ...]:
    """BM25 terms: split words, stop words dropped, English stems (cached: requests are read several times)."""
    words = [w for w in split_identifier(text) if w not in STOPWORDS]
    stemmer = _stemmer()
    if stemmer is not None and words:
        return tuple(stemmer.stemWords(words))
    return tuple(words)


@lru_cache(maxsize=4096)
def query_terms(text: str) -> tuple[str, ...]:
    """A request's BM25 terms, plus each pair of adjacent words written as one.

    People write apart what identifiers write together ("high schoolers" for ``Highschooler``,
    "user name" for ``username``, "zip code" for ``zipcode``); a joined pair only counts where
    the catalogue holds it as a term, so it adds nothing elsewhere.
    """
    words = split_identifier(text)
    joined = [a + b for a, b in zip(words, words[1:]) if a not in STOPWORDS and b not in STOPWORDS]
    stemmer = _stemmer()
    if stemmer is not None and joined:
        joined = stemmer.stemWords(joined)
    return terms(text) + tuple(joined)   # cached: a request is scored whole and per sentence, and explained


@dataclass(frozen=True)
class Field:
    text: str
    weight: float = 1.0


class BM25Index:
    """BM25F-style: each field's terms count ``weight`` times; k1 1.2, b 0.75."""

    def __init__(self, documents: Sequence[Sequence[Field]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        vocab: dict[str, int] = {}
        rows, cols, tfs = [], [], []
        lengths = np.zeros(len(documents), dtype=np.float32)
        for row, fields in enumerate(documents):
            counts: dict[int, float] = {}
            for field in fields:
                for term in terms(field.text):
                    col = vocab.setdefault(term, len(vocab))
                    counts[col] = counts.get(col, 0.0) + field.weight
            for col, tf in counts.items():
                rows.append(row)
                cols.append(col)
                tfs.append(tf)
            lengths[row] = sum(counts.values())
        self.vocab = vocab
        n = max(len(documents), 1)
        tf = sparse.csc_matrix((np.asarray(tfs, np.float32), (rows, cols)), shape=(len(documents), len(vocab)))
        df = np.diff(tf.indptr).astype(np.float32)
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
        avgdl = float(lengths.mean()) if len(documents) else 1.0
        norm = k1 * (1 - b + b * lengths / max(avgdl, 1e-9))
        coo = tf.tocoo()
        weights = self.idf[coo.col] * coo.data * (k1 + 1) / (coo.data + norm[coo.row])
        self.weights = sparse.csc_matrix((weights, (coo.row, coo.col)), shape=tf.shape)
        self.size = len(documents)
        self._inverse: dict[int, str] | None = None

    def query_terms(self, text: str) -> list[int]:
        return list(dict.fromkeys(self.vocab[t] for t in query_terms(text) if t in self.vocab))

    def scores(self, text: str) -> tuple[np.ndarray, float]:
        """BM25 of every document, and what a document holding every known query term once would score.

        The second number makes scores comparable across queries: ``score / best`` is the share of
        the query's (catalogue-known) weight a document covers.
        """
        cols = self.query_terms(text)
        if not cols or self.size == 0:
            return np.zeros(self.size, np.float32), 0.0
        # the query's columns gathered by hand (scipy's column slicing costs ~1 ms a call)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        spans = [(indptr[c], indptr[c + 1]) for c in cols]
        rows = np.concatenate([indices[a:b] for a, b in spans])
        values = np.concatenate([data[a:b] for a, b in spans])
        out = np.bincount(rows, weights=values, minlength=self.size).astype(np.float32)
        return out, float(self.idf[cols].sum())

    def matched(self, text: str, document: int) -> list[str]:
        """The query's terms this document holds (the evidence of a result)."""
        if self._inverse is None:
            self._inverse = {i: t for t, i in self.vocab.items()}
            self._by_row = self.weights.tocsr()   # one row's terms without scipy's slow element lookups
        row = self._by_row
        held = set(row.indices[row.indptr[document]:row.indptr[document + 1]].tolist())
        return [self._inverse[c] for c in self.query_terms(text) if c in held]
