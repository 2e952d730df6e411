"""Languages for full text: which Postgres text-search configuration a chunk is indexed
with, and how text in scripts written without spaces is cut into words.

Ingestion detects each chunk's language (py3langid: a naive Bayes model shipped inside
the package, nothing downloaded) and stores it with the matching configuration: one of
the Snowball stemmers Postgres ships, or ``simple`` (lower-casing only) for languages it
has none for. A chunk whose own text says too little (short, or a mix) takes its
document's language; a document that says too little is indexed as ``DEFAULT_LANGUAGE``,
which is what every chunk got before languages were detected.

Chinese, Japanese, Thai (and Lao, Khmer, Burmese) put no spaces between words, and
Postgres's parser splits text on spaces and punctuation only: a whole clause would
become one lexeme. :func:`segment` cuts such runs into words — Han by jieba's
dictionary (rjieba, its Rust port, in search mode: long words and the words inside
them), kana and the South-East Asian scripts into overlapping character bigrams — and
leaves every other character where it was. It depends on the text alone, never on the
detected language, so a query (too short to detect reliably) is cut exactly as the
documents were: ``lexical_text`` is applied to both.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

DEFAULT_LANGUAGE = "en"

# ISO 639-1 code -> Postgres text-search configuration with a Snowball stemmer (the 29 that
# PostgreSQL 18 ships; `SELECT cfgname FROM pg_ts_config`). Any other language: `simple`.
# A deployment whose Postgres lacks one falls back to `simple` too (insert_staged_chunks).
CONFIGS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
    "en": "english", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german", "el": "greek",
    "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
SIMPLE = "simple"

# The detector's labels that name a variety of a language it also knows: one language for us
# (Wu Chinese is what Mandarin paragraphs full of names are often taken for).
_ALIASES = {"wuu": "zh", "yue": "zh", "nn": "no", "nb": "no"}

# How sure the detector must be (its normalized probability) before its answer is used: for a
# document's sample, and for a chunk to differ from its document. English prose full of Latin
# species names scores ~0.7 Latin; a German or Chinese paragraph scores above 0.9.
DOCUMENT_CONFIDENCE = 0.5
CHUNK_CONFIDENCE = 0.9
CHUNK_MIN_CHARS = 40            # word characters a chunk needs to be judged on its own
SAMPLE_WINDOWS = 4              # a document is judged on this many evenly spaced windows ...
SAMPLE_CHARS = 2500             # ... of this many characters each (the detector is linear in length)

# Scripts without spaces between words.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_KANA = "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_SOUTHEAST = "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f"  # Thai, Lao, Khmer, Myanmar
_UNSPACED = re.compile(f"(?P<han>[{_HAN}]+)|(?P<other>[{_KANA}{_SOUTHEAST}]+)")
UNSPACED_SCRIPTS = f"{_HAN}{_KANA}{_SOUTHEAST}"  # a character class body: [UNSPACED_SCRIPTS]
_WORD_CHAR = re.compile(r"\w")


@dataclass(frozen=True)
class Detection:
    language: str | None        # ISO 639-1 (or 639-3 where there is no 1) code; None: undetermined
    confidence: float


@dataclass(frozen=True)
class ChunkLanguage:
    """What a chunk row stores for full text (infra/migrations/0006_languages.sql)."""

    language: str | None
    text_config: str
    segmented: str | None


@functools.cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def preload() -> None:
    """Load the language identifier's model now (~3 s), at a worker's start-up rather than in the
    first document's ingestion."""
    _identifier()


@functools.cache
def _jieba():
    import rjieba

    return rjieba


def detect(text: str) -> Detection:
    """The language of ``text`` and the detector's probability for it."""
    if not _WORD_CHAR.search(text):
        return Detection(None, 0.0)
    label, confidence = _identifier().classify(text)
    if label in ("und", "zxx"):
        return Detection(None, confidence)
    return Detection(_ALIASES.get(label, label), confidence)


def sample(text: str, windows: int = SAMPLE_WINDOWS, size: int = SAMPLE_CHARS) -> str:
    """Evenly spaced windows of a long text (all of a short one): enough to tell its language."""
    if len(text) <= windows * size:
        return text
    step = (len(text) - size) / (windows - 1)
    return "\n".join(text[round(i * step):round(i * step) + size] for i in range(windows))


def document_language(text: str) -> str:
    found = detect(sample(text))
    if found.language is None or found.confidence < DOCUMENT_CONFIDENCE:
        return DEFAULT_LANGUAGE
    return found.language


def chunk_language(text: str, document: str) -> str:
    """The chunk's own language when it says so clearly, its document's otherwise."""
    if len(_WORD_CHAR.findall(text)) < CHUNK_MIN_CHARS:
        return document
    found = detect(text)
    if found.language is None or found.confidence < CHUNK_CONFIDENCE:
        return document
    return found.language


def text_config(language: str | None) -> str:
    return CONFIGS.get(language or DEFAULT_LANGUAGE, SIMPLE)


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def segment(text: str) -> str | None:
    """``text`` with every run of an unspaced script cut into space-separated words; None when
    there is no such run (the text is indexed as it is)."""
    if not _UNSPACED.search(text):
        return None

    def cut(match: re.Match) -> str:
        run = match.group(0)
        words = _jieba().cut_for_search(run) if match.group("han") else _bigrams(run)
        return " " + " ".join(w for w in words if not w.isspace()) + " "

    return _UNSPACED.sub(cut, text)


def lexical_text(text: str) -> str:
    """What Postgres parses for full text: the segmented text, or the text itself."""
    segmented = segment(text)
    return text if segmented is None else segmented


def analyse(document_text: str, chunks: list[str]) -> list[ChunkLanguage]:
    """Language, configuration and segmented text of each chunk of a document."""
    if not chunks:
        return []
    document = document_language(document_text)
    out = []
    for chunk in chunks:
        language = chunk_language(chunk, document)
        out.append(ChunkLanguage(language, text_config(language), segment(chunk)))
    return out
