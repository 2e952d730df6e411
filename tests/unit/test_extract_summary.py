"""Document summaries: extractive sentences spread over the document; an LLM's when configured."""

from __future__ import annotations

import pytest
from edgeindex.ingest.summary import (
    MAX_SUMMARY_CHARS,
    extractive_summary,
    sentences,
    summarize,
)


def report(sections: int = 5, per_section: int = 12) -> str:
    paragraphs = []
    for s in range(sections):
        body = [f"Section {s} filler sentence number {i} mentions nothing in particular today."
                for i in range(per_section)]
        body[3] = f"Section {s} explains search latency and search quality for agents in depth."
        paragraphs.append(" ".join(body))
    return "\n\n".join(paragraphs)


def test_sentences_split_at_punctuation_and_lines():
    assert [s for _, s in sentences("One two. Three four!\nFive six?  Seven")] == [
        "One two.", "Three four!", "Five six?", "Seven"]
    text = "Alpha beta. Gamma delta."
    assert [text[o:o + len(s)] for o, s in sentences(text)] == ["Alpha beta.", "Gamma delta."]


def test_extractive_summary_takes_one_sentence_per_region_in_order():
    text = report()
    summary = extractive_summary(text, 5)
    picked = [f"Section {s} explains search latency" for s in range(5)]
    assert all(p in summary for p in picked)
    assert [summary.index(p) for p in picked] == sorted(summary.index(p) for p in picked)


def test_extractive_summary_respects_its_bounds():
    assert extractive_summary(report(), 0) == ""
    assert len(extractive_summary(report(40, 12), 200)) <= MAX_SUMMARY_CHARS + 2
    assert extractive_summary("short note", 3) == "short note"  # no full sentence: the beginning


class FakeLLM:
    model_id = "fake-chat"

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str]] = []

    async def complete(self, system: str, user: str, *, max_tokens: int = 300) -> str:
        self.calls.append((system, user))
        if self.answer is None:
            raise ConnectionError("model unavailable")
        return self.answer


async def test_llm_summary_when_configured():
    llm = FakeLLM("  A report about search latency.  ")
    summary, method = await summarize(report(), n=3, llm=llm, title="Report")
    assert (summary, method) == ("A report about search latency.", "llm:fake-chat")
    assert "Title: Report" in llm.calls[0][1]


async def test_llm_failure_falls_back_to_extractive():
    summary, method = await summarize(report(), n=3, llm=FakeLLM(None))
    assert method == "extractive" and summary == extractive_summary(report(), 3)


@pytest.mark.parametrize("n", [1, 3])
async def test_without_llm_the_summary_is_extractive(n):
    assert await summarize(report(), n=n) == (extractive_summary(report(), n), "extractive")
