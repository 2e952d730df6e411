"""Which queries an enhancement is tried on: cheap features of the query and of the first pass.

An enhancement costs a second lexical pass (PRF) or an LLM call (synonyms, HyDE); it can
only gain where the query's own words did not already find their chunk. The first pass
tells: its best BM25 score is a share of what a chunk holding every query word would
score, so a low best share means the query's words are rare in, or missing from, the
scope's chunks. Thresholds live in ``defaults.py`` and were chosen from the evaluation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..engine import LexicalResult
from . import defaults

_WORD = re.compile(r"\w+")
_IDENTIFIER = re.compile(r"^(?=.*\d)[\w.:/-]+$|^\w+[_./:-]\w+")


@dataclass(frozen=True)
class Evidence:
    words: int          # words in the query
    tokens: int         # space-separated tokens ("4711-ab" is one)
    identifiers: int    # tokens that look like identifiers or numbers (no synonym helps them)
    quoted: bool        # the query quotes a phrase: it means exactly that
    top: float          # the first pass's best lexical score (0..1), 0 when nothing matched
    matched: int        # chunks the first pass found


def evidence(query: str, lexical: LexicalResult | None) -> Evidence:
    words = _WORD.findall(query)
    tokens = query.split()
    identifiers = sum(1 for w in tokens if _IDENTIFIER.search(w))
    top = 0.0
    if lexical is not None and lexical.ids:
        top = max(t + g for t, g in zip(lexical.text, lexical.trigram, strict=True))
    return Evidence(words=len(words), tokens=len(tokens), identifiers=identifiers, quoted='"' in query, top=top,
                    matched=len(lexical.ids) if lexical is not None else 0)


def prf(e: Evidence, max_top: float = defaults.PRF_GATE_MAX_TOP) -> str | None:
    """None when PRF may run, else why not. It needs chunks to learn from."""
    if e.matched == 0:
        return "no first-pass match"
    if e.top > max_top:
        return f"first pass strong (best {e.top:.2f} > {max_top})"
    return None


def llm(e: Evidence, max_top: float = defaults.LLM_GATE_MAX_TOP) -> str | None:
    """None when the LLM may be asked, else why not."""
    if e.words < defaults.LLM_GATE_MIN_WORDS or e.words > defaults.LLM_GATE_MAX_WORDS:
        return f"query length {e.words} words"
    if e.quoted:
        return "quoted phrase"
    if e.identifiers * 2 >= e.tokens:
        return "identifiers"  # order numbers and codes have no synonyms, nor a hypothetical answer
    if e.top >= max_top:
        return f"first pass strong (best {e.top:.2f} >= {max_top})"
    return None
