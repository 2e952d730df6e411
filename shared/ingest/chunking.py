"""Recursive chunking with ``semantic-text-splitter``.

The splitter fills each chunk with the largest semantic units that fit the
capacity, descending paragraph → line → sentence → word → character only when a
unit is too big, and overlaps neighbours by up to ``overlap``. Capacity is
counted in the embedder's own tokens when it exposes a tokenizer, so no chunk is
truncated by the model; otherwise in characters (about four per token).
Markdown uses the Markdown-aware splitter (headings, lists, code blocks).

Chunks are described by offsets into the normalized text; their content is
always ``text[start:end]``, so step outputs only carry positions and hashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semantic_text_splitter import MarkdownSplitter, TextSplitter

from ..validation import content_hash

MAX_CHARS_PER_TOKEN = 16  # no real token is longer: a bound on a chunk's characters (see Chunker._bounded)
CHARS_PER_TOKEN = 4  # fallback capacity when the embedder has no tokenizer


@dataclass(frozen=True)
class Chunk:
    position: int      # ordinal within the document
    start: int         # character offsets into the extracted text
    end: int
    tokens: int
    hash: str          # sha256 of the content: the hash-diff key

    def content(self, text: str) -> str:
        return text[self.start:self.end]

    def to_row(self) -> list:
        return [self.start, self.end, self.tokens, self.hash]

    @classmethod
    def from_row(cls, position: int, row: list) -> Chunk:
        start, end, tokens, digest = row
        return cls(position, start, end, tokens, digest)


class Chunker:
    """Splitters for one (tokenizer, capacity, overlap); reuse it, building one costs a tokenizer load."""

    def __init__(self, tokenizer: Any | None, *, capacity: int, overlap: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if not 0 <= overlap < capacity:
            raise ValueError("overlap must be at least 0 and smaller than capacity")
        self.tokenizer = tokenizer
        self.capacity = capacity
        self.overlap = overlap
        if tokenizer is not None:
            self._text = TextSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity, overlap=overlap)
            self._markdown = MarkdownSplitter.from_huggingface_tokenizer(tokenizer, capacity=capacity,
                                                                         overlap=overlap)
        else:
            chars, overlap_chars = capacity * CHARS_PER_TOKEN, overlap * CHARS_PER_TOKEN
            self._text = TextSplitter(chars, overlap=overlap_chars)
            self._markdown = MarkdownSplitter(chars, overlap=overlap_chars)

    def _bounded(self, pieces: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Pieces no longer than any real chunk of ``capacity`` tokens can be. A WordPiece tokenizer
        counts a "word" of more than 100 characters as one unknown token, so 1 MB without a space
        would otherwise pass as a single chunk; such pieces are cut by characters instead."""
        limit = self.capacity * MAX_CHARS_PER_TOKEN
        if all(len(piece) <= limit for _, piece in pieces):
            return pieces
        bounded: list[tuple[int, str]] = []
        for start, piece in pieces:
            if len(piece) <= limit:
                bounded.append((start, piece))
                continue
            step = limit - self.overlap * CHARS_PER_TOKEN
            for offset in range(0, len(piece), step):
                bounded.append((start + offset, piece[offset:offset + limit]))
                if offset + limit >= len(piece):
                    break
        return bounded

    def count_tokens(self, texts: list[str]) -> list[int]:
        if self.tokenizer is None:
            return [max(1, -(-len(t) // CHARS_PER_TOKEN)) for t in texts]
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def split(self, text: str, *, markdown: bool = False) -> list[Chunk]:
        splitter = self._markdown if markdown else self._text
        pieces = self._bounded(splitter.chunk_indices(text))  # (character offset, trimmed chunk)
        tokens = self.count_tokens([piece for _, piece in pieces])
        return [Chunk(i, start, start + len(piece), n, content_hash(piece))
                for i, ((start, piece), n) in enumerate(zip(pieces, tokens))]
