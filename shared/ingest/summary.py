"""Document summaries: extractive by default, an LLM's when one is configured.

The extractive summary cuts the document into N regions of equal size and takes
from each its most representative sentence, in document order: a long report gets
a sentence from its beginning, middle and end rather than N sentences from its
introduction. A sentence scores by its words' weight in the document (frequent
overall, but concentrated in few sentences: tf·idf with sentences as documents),
so boilerplate repeated in every sentence does not win.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter

from ..shorten import shorten

log = logging.getLogger(__name__)

MAX_SUMMARY_CHARS = 1500
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_STOP = frozenset("""the and for are but not you all any can had her was one our out has have him his how its
may new now see two way who did get she too use that with this from they will would there their what about which
when make like time just know take into year your some could them than then look only come over also back after
work first well even want because these give most very were been being more such here where other those""".split())
_MIN_WORDS, _MAX_SENTENCE_CHARS = 4, 400
LLM_INPUT_CHARS = 6000


def sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) pairs; paragraph and line breaks end sentences too."""
    found: list[tuple[int, str]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start:match.start()].strip()
        if piece:
            found.append((start, piece))
        start = match.end()
    if text[start:].strip():
        found.append((start, text[start:].strip()))
    return found


def _words(sentence: str) -> list[str]:
    return [w for w in (m.group().lower() for m in _WORD.finditer(sentence)) if w not in _STOP]


def extractive_summary(text: str, n: int) -> str:
    if n <= 0 or not text:
        return ""
    candidates = [(offset, s) for offset, s in sentences(text)
                  if len(s) <= _MAX_SENTENCE_CHARS and len(s.split()) >= _MIN_WORDS]
    if not candidates:  # short notes, lists: the beginning is the best we have
        return shorten(text, MAX_SUMMARY_CHARS)
    words_of = [_words(s) for _, s in candidates]
    frequency = Counter(w for words in words_of for w in words)
    spread = Counter(w for words in words_of for w in set(words))
    total = len(candidates)
    weight = {w: math.log1p(frequency[w]) * math.log((1 + total) / spread[w]) for w in frequency}

    def score(words: list[str]) -> float:
        return sum(weight[w] for w in words) / math.sqrt(len(words)) if words else 0.0

    region = max(1, math.ceil(len(text) / n))
    best: dict[int, tuple[float, int, str]] = {}
    for (offset, sentence), words in zip(candidates, words_of):
        slot = min(n - 1, offset // region)
        value = score(words)
        if slot not in best or value > best[slot][0]:
            best[slot] = (value, offset, sentence)
    chosen = [s for _, _, s in sorted(best.values(), key=lambda item: item[1])]
    summary = " ".join(chosen)
    return shorten(summary, MAX_SUMMARY_CHARS)


async def llm_summary(llm, text: str, *, title: str, sentences_hint: int) -> str:
    """A short abstract written by the configured chat model."""
    excerpt = text if len(text) <= LLM_INPUT_CHARS else (
        shorten(text, LLM_INPUT_CHARS // 2) + "\n" + extractive_summary(text, max(8, sentences_hint * 3)))
    system = ("You write the summary shown next to search results. Answer with a plain summary of at most "
              f"{max(2, sentences_hint)} sentences, no preamble, in the document's language.")
    user = f"Title: {title or '(none)'}\n\n{excerpt}"
    return shorten(await llm.complete(system, user, max_tokens=300), MAX_SUMMARY_CHARS)


async def summarize(text: str, *, n: int, llm=None, title: str = "") -> tuple[str, str]:
    """(summary, method); an LLM failure falls back to the extractive summary."""
    if llm is not None:
        try:
            summary = await llm_summary(llm, text, title=title, sentences_hint=n)
            if summary:
                return summary, f"llm:{llm.model_id}"
        except Exception:
            log.warning("LLM summary failed; using the extractive one", exc_info=True)
    return extractive_summary(text, n), "extractive"
