"""Words of identifiers and prose, and a small BM25 index for catalogues held in memory.

Tool and index catalogues are small (tens to a few thousand entries) and are scored
whole for every request, so the index is a dense-per-query, sparse-in-store matrix of
precomputed BM25 weights: a query is a sum of a few columns. Identifiers are split the
way people write them (``get_order_details``, ``math.hypot``, ``getOrderDetails``,
``HTTPServer2``) so a request's words meet a tool's name.

Languages, as search has them (``shared/language.py``): runs of scripts written without spaces
(Han, kana, Thai ...) are cut into words by the same ``segment`` search uses, for entries and
requests alike. Each entry is stemmed in its own language, detected once when its catalogue is
built the way ingestion detects a chunk's (the catalogue is the document: an entry differs from it
only when its own text says so clearly), and a request is stemmed once per language its catalogue
holds, each entry scored with its own language's terms. English stop words are dropped from English
terms only. A catalogue in English only scores as it would without any of this.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import sparse

from .. import language

# camelCase and digit boundaries: "getHTTPResponse2xx" -> get HTTP Response 2 xx
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)   # letters and digits of any script; `_ . -` and the rest split

# Function words carry no choice between tools; the list is short on purpose (English only: dropped
# from English terms alone; other languages keep all their words, which BM25's idf already discounts).
STOPWORDS = frozenset("""
a an and are as at be but by can could do does for from had has have how i if in into is it its
me my of on or our please should so than that the their them then there these this those to
us was we were what when where which who whom why will with would you your
""".split())


ENGLISH = language.text_config("en")   # a term scheme: the Snowball stemmer's name, or language.SIMPLE


@lru_cache(maxsize=64)
def _stemmer(scheme: str = ENGLISH):
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is a dependency; plain words still work
        return None
    return Stemmer.Stemmer(scheme) if scheme in Stemmer.algorithms() else None


def scheme_of(code: str | None) -> str:
    """How an entry in language ``code`` is cut into terms: the Snowball stemmer search indexes it with,
    or ``simple`` (no stemmer, e.g. Chinese, whose words ``segment`` already cut)."""
    return language.text_config(code)


def split_identifier(text: str) -> list[str]:
    """Words of an identifier or a sentence, lower-cased, without stemming."""
    words: list[str] = []
    for raw in _WORD.findall(text):
        words.extend(part.lower() for part in _CAMEL.split(raw) if part)
    return words


def words(text: str) -> list[str]:
    """``split_identifier`` over the text with its unspaced runs cut into words (language.segment)."""
    segmented = language.segment(text)
    return split_identifier(text if segmented is None else segmented)


@lru_cache(maxsize=8192)
def terms(text: str, scheme: str = ENGLISH) -> tuple[str, ...]:
    """BM25 terms: words, English stop words dropped from English terms, stems of the scheme's language
    (cached: requests are read several times)."""
    found = words(text)
    if scheme == ENGLISH:
        found = [w for w in found if w not in STOPWORDS]
    stemmer = _stemmer(scheme) if scheme != language.SIMPLE else None
    if stemmer is not None and found:
        return tuple(stemmer.stemWords(found))
    return tuple(found)


@lru_cache(maxsize=4096)
def query_terms(text: str, scheme: str = ENGLISH) -> tuple[str, ...]:
    """A request's BM25 terms, plus each pair of adjacent words written as one.

    People write apart what identifiers write together ("high schoolers" for ``Highschooler``,
    "user name" for ``username``, "zip code" for ``zipcode``); a joined pair only counts where
    the catalogue holds it as a term, so it adds nothing elsewhere.
    """
    found = words(text)
    stop = STOPWORDS if scheme == ENGLISH else frozenset()
    joined = [a + b for a, b in zip(found, found[1:]) if a not in stop and b not in stop]
    stemmer = _stemmer(scheme) if scheme != language.SIMPLE else None
    if stemmer is not None and joined:
        joined = stemmer.stemWords(joined)
    return terms(text, scheme) + tuple(joined)   # cached: a request is scored whole and per sentence, and explained


@lru_cache(maxsize=16384)
def _entry_language(text: str, catalogue: str) -> str:
    return language.chunk_language(text, catalogue)


def entry_schemes(texts: Sequence[str]) -> list[str]:
    """Each catalogue entry's term scheme. The catalogue's language is judged on all its entries' text
    (a document's, language.document_language); an entry takes its own only when its text is long and
    clear enough (language.chunk_language), so a short English description ("Sends an email", which
    the detector is unsure of) stays English in an English catalogue. Cached by text: a catalogue
    rebuilt after one change detects only what changed (plus the one catalogue-wide sample)."""
    if not texts:
        return []
    catalogue = language.document_language("\n".join(texts))
    english = catalogue == language.DEFAULT_LANGUAGE
    # The detector costs ~0.5-1 ms an entry, on the catalogue build a select may wait for: in an English
    # catalogue an entry written in ASCII alone stays English without asking it (one in another language
    # nearly always has a letter outside ASCII; one that has not is scored as every entry was before).
    return [ENGLISH if english and text.isascii() else scheme_of(_entry_language(text, catalogue))
            for text in texts]


@dataclass(frozen=True)
class Field:
    text: str
    weight: float = 1.0


class BM25Index:
    """BM25F-style: each field's terms count ``weight`` times; k1 1.2, b 0.75."""

    def __init__(self, documents: Sequence[Sequence[Field]], *, k1: float = 1.2, b: float = 0.75,
                 schemes: Sequence[str] | None = None) -> None:
        self.k1, self.b = k1, b
        self.schemes = list(schemes) if schemes is not None else entry_schemes(
            [" ".join(f.text for f in fields if f.text) for fields in documents])
        # the rows of each scheme, for scoring a request once per language (none: one scheme, every row)
        kinds = list(dict.fromkeys(self.schemes)) or [ENGLISH]
        labels = np.asarray([kinds.index(s) for s in self.schemes], dtype=np.int64)
        self._by_scheme = [(kinds[0], None)] if len(kinds) == 1 else [(s, labels == i) for i, s in enumerate(kinds)]
        vocab: dict[str, int] = {}
        rows, cols, tfs = [], [], []
        lengths = np.zeros(len(documents), dtype=np.float32)
        for row, fields in enumerate(documents):
            counts: dict[int, float] = {}
            scheme = self.schemes[row]
            for field in fields:
                for term in terms(field.text, scheme):
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

    def query_terms(self, text: str, scheme: str = ENGLISH) -> list[int]:
        return list(dict.fromkeys(self.vocab[t] for t in query_terms(text, scheme) if t in self.vocab))

    def scores(self, text: str) -> tuple[np.ndarray, float]:
        """BM25 of every document, and what a document holding every known query term once would score.

        The second number makes scores comparable across queries: ``score / best`` is the share of
        the query's (catalogue-known) weight a document covers. A catalogue of several languages scores
        each document with the request's terms in the document's language; the best is the largest of
        the languages' (a share can only be under-stated, never over 1).
        """
        if self.size == 0:
            return np.zeros(0, np.float32), 0.0
        out: np.ndarray | None = None
        best = 0.0
        for scheme, rows_of in self._by_scheme:
            cols = self.query_terms(text, scheme)
            if not cols:
                continue
            scored = self._columns(cols)
            best = max(best, float(self.idf[cols].sum()))
            if rows_of is None:
                out = scored
            else:
                out = np.zeros(self.size, np.float32) if out is None else out
                out[rows_of] = scored[rows_of]
        return (out if out is not None else np.zeros(self.size, np.float32)), best

    def coverage(self, text: str) -> np.ndarray:
        """How many of the request's distinct terms each document holds (any field, any weight): what a
        question asks for spread over a schema's fields, against one word that a name happens to share."""
        out = np.zeros(self.size, np.float32)
        indptr, indices = self.weights.indptr, self.weights.indices
        for scheme, rows_of in self._by_scheme:
            cols = self.query_terms(text, scheme)
            if not cols:
                continue
            counted = np.bincount(np.concatenate([indices[indptr[c]:indptr[c + 1]] for c in cols]),
                                  minlength=self.size).astype(np.float32)
            if rows_of is None:
                out = counted
            else:
                out[rows_of] = counted[rows_of]
        return out

    def _columns(self, cols: list[int]) -> np.ndarray:
        # the query's columns gathered by hand (scipy's column slicing costs ~1 ms a call)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        spans = [(indptr[c], indptr[c + 1]) for c in cols]
        rows = np.concatenate([indices[a:b] for a, b in spans])
        values = np.concatenate([data[a:b] for a, b in spans])
        return np.bincount(rows, weights=values, minlength=self.size).astype(np.float32)

    def matched(self, text: str, document: int) -> list[str]:
        """The query's terms this document holds (the evidence of a result)."""
        if self._inverse is None:
            self._inverse = {i: t for t, i in self.vocab.items()}
            self._by_row = self.weights.tocsr()   # one row's terms without scipy's slow element lookups
        row = self._by_row
        held = set(row.indices[row.indptr[document]:row.indptr[document + 1]].tolist())
        return [self._inverse[c] for c in self.query_terms(text, self.schemes[document]) if c in held]
