"""The tasks inside a tool-selection request's sentences, as character spans of the request.

"Find the weather in Paris, and then book a hotel there" asks for two tools in one sentence. Its
clauses are cut at sentence punctuation (any language), at inline list numbers ("1) ... 2) ...")
and, inside a sentence, at the connectors below; each clause's vector is pooled from the request's
own forward pass (bindings/span_pooling.py), so clauses cost no model time. A request of one clause
has none (the whole request says it).

Connectors: the English ones are how most agents' requests chain tasks; the others are the same
sequencing words ("and then", "after that", "as well as", "also") in the languages search stems
(German, French, Spanish, Italian, Portuguese, Dutch) and in Chinese and Japanese, where they are
written without spaces. A bare "and" cuts only before a task word (English), so "the area and
perimeter" stays one task. A language without a connector here is cut at punctuation alone (fewer
clauses, which only means fewer extra picks; the request's own vector and BM25 still hold every word).
"""

from __future__ import annotations

import re

from .text import terms

# Sentence ends, line breaks and semicolons: the cut of the sentences select scores alone too (tools._SENTENCE).
# Full-width ends (Chinese, Japanese: "。！？；", written with no space after them: the mark itself is the cut),
# the Devanagari danda and the Arabic question mark end a sentence as ". ? ! ;" do.
SENTENCE_BREAK = re.compile(r"(?<=[.?!\u0964\u061f])\s+|[\u3002\uff01\uff1f\uff61\uff1b]\s*|\n+|;\s*")
# Verbs (and question words) that start a task after a bare "and": "... and find ...", "... and what ...".
TASK_WORDS = ("find", "get", "calculate", "tell", "give", "show", "check", "book", "convert", "compute", "fetch",
              "search", "look", "list", "predict", "determine", "estimate", "what", "how", "which", "who", "when",
              "where", "send", "create", "make", "retrieve", "generate", "schedule", "cancel", "update",
              "delete", "translate", "plot", "analyze", "analyse", "identify", "provide", "buy", "remove",
              "export", "refund")
# Sequencing words of other languages, each cutting wherever it stands between two words (", " before it
# or not). Written lower-case; matched case-insensitively.
SPACED_CONNECTORS = (
    "und dann", "und danach", "danach", "außerdem", "sowie", "anschließend",          # de
    "et puis", "puis", "ensuite", "et aussi", "ainsi que", "après cela",               # fr
    "y luego", "luego", "después", "y también", "además",                             # es
    "e poi", "poi", "e anche", "inoltre",                                             # it
    "e depois", "depois", "e também", "além disso",                                   # pt
    "en dan", "daarna", "en ook", "evenals",                                          # nl
)
UNSPACED_CONNECTORS = ("然后", "并且", "接着", "之后", "同时", "另外", "还要", "そして", "それから", "その後")
# English connectors that start a new task inside a sentence.
CONNECTORS = (
    r",?\s+(?:and\s+)?then\s+",      # "..., then ...", "... and then ..."
    r",?\s+and\s+also\s+",           # "... and also ..."
    r",\s+and\s+",                   # "..., and ..."
    r",\s*also,?\s+",                # "..., also ..."
    r"\s+as\s+well\s+as\s+",         # "... as well as ..."
    r",?\s+after\s+that,?\s+",       # "... after that ..."
    r",\s+plus\s+",                  # "..., plus ..."
    r"\s+and\s+(?=(?:" + "|".join(TASK_WORDS) + r")\b)",   # "... and find ..."
    r"(?:^|\s)\(?\d{1,2}[.)]\s+(?=[^\W\d_])",             # "1) find ... 2) book ...", "1. ... 2. ..."
    r",?\s+(?:" + "|".join(re.escape(c) for c in SPACED_CONNECTORS) + r"),?\s+",
    r"[,，、]?(?:" + "|".join(re.escape(c) for c in UNSPACED_CONNECTORS) + r")[,，、]?"
    r"(?=[\u3040-\u30ff\u3400-\u9fff])",
)
_CONNECTOR = re.compile("|".join(CONNECTORS), re.IGNORECASE)
_EDGE = " ,\"'\t，、"
MAX_CLAUSES = 16   # pooling a clause is ~10 µs; a cap only for pathological requests


def _pieces(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    cuts = [(m.start(), m.end()) for m in pattern.finditer(text, start, end) if m.end() > m.start()]
    bounds = [start] + [c for cut in cuts for c in cut] + [end]
    return list(zip(bounds[::2], bounds[1::2]))


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _EDGE:
        start += 1
    while end > start and text[end - 1] in _EDGE:
        end -= 1
    return start, end


def clause_spans(text: str, min_terms: int) -> list[tuple[int, int]]:
    """(start, end) of each clause of ``min_terms`` terms or more (stop words aside), in order; none
    unless there are two or more."""
    spans: list[tuple[int, int]] = []
    for s_start, s_end in _pieces(SENTENCE_BREAK, text, 0, len(text)):
        for c_start, c_end in _pieces(_CONNECTOR, text, s_start, s_end):
            a, b = _stripped(text, c_start, c_end)
            if b > a and len(terms(text[a:b])) >= min_terms:
                spans.append((a, b))
    return spans[:MAX_CLAUSES] if len(spans) >= 2 else []
