"""Text cut for reading: at a sentence end near the limit, else at a word boundary, with an ellipsis."""

from __future__ import annotations

import pytest
from edgeindex.ingest.summary import MAX_SUMMARY_CHARS, extractive_summary
from edgeindex.shorten import ELLIPSIS, shorten

ENGLISH = ("Edgeindex answers agents' searches in milliseconds. It filters by tenant before any vector math, "
           "blends full text with vectors, and never serves a cached answer that holds a deleted chunk. "
           "Summaries and snippets are cut where a reader expects them to stop.")
CHINESE = ("检索服务在几毫秒内回答智能体的查询。它先按租户过滤，再做向量计算，并且从不返回包含已删除片段的缓存结果。"
           "摘要和片段在读者期望的位置截断。")


def han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def assert_cut_cleanly(original: str, cut: str, limit: int) -> str:
    assert len(cut) <= limit and cut.endswith(ELLIPSIS)
    kept = cut[:-len(ELLIPSIS)].rstrip()
    assert original.startswith(kept) and kept
    following = original[len(kept):len(kept) + 1]
    assert following.isspace() or kept[-1] in ".!?。！？" or han(kept[-1]) or han(following)
    return kept


def test_text_that_fits_is_left_whole():
    assert shorten(f"  {ENGLISH}  ", len(ENGLISH)) == ENGLISH
    assert shorten("", 10) == ""


@pytest.mark.parametrize("limit", range(40, len(ENGLISH), 7))
def test_english_is_cut_at_a_sentence_end_or_between_words(limit):
    assert_cut_cleanly(ENGLISH, shorten(ENGLISH, limit), limit)


def test_a_sentence_end_near_the_limit_wins_over_a_later_word():
    limit = ENGLISH.index("It filters") + 25
    assert shorten(ENGLISH, limit) == "Edgeindex answers agents' searches in milliseconds. …"
    cut = shorten(ENGLISH, len(ENGLISH) - 10)
    assert cut.endswith("deleted chunk. …")


@pytest.mark.parametrize("limit", range(8, len(CHINESE), 5))
def test_chinese_is_cut_at_a_full_stop_or_between_characters(limit):
    assert_cut_cleanly(CHINESE, shorten(CHINESE, limit), limit)


def test_chinese_prefers_a_full_stop_near_the_limit():
    limit = CHINESE.index("。") + 4
    assert shorten(CHINESE, limit) == CHINESE[:CHINESE.index("。") + 1] + ELLIPSIS


def test_a_combining_mark_stays_with_its_letter():
    cut = shorten("e\u0301" * 30, 20)  # one "word" longer than the room: cut inside it, not inside a letter
    assert cut[:-1].endswith("e\u0301") and len(cut) <= 20


def test_a_long_summary_ends_at_a_sentence_or_word_boundary():
    sentences = [f"Report section {i} describes search latency, cache behaviour and chunk quality for agents."
                 for i in range(200)]
    text = " ".join(sentences)
    summary = extractive_summary(text, 40)
    assert len(summary) <= MAX_SUMMARY_CHARS
    assert summary.endswith(". " + ELLIPSIS)  # sentences of ~90 characters: one always ends near the limit
    assert all(f"{s}." in sentences for s in summary[:-len(". " + ELLIPSIS)].split(". "))  # whole sentences only


def test_a_long_chinese_summary_ends_at_a_full_stop():
    text = CHINESE * 30  # no spaces and no line breaks: the beginning is the summary
    summary = extractive_summary(text, 5)
    assert len(summary) <= MAX_SUMMARY_CHARS
    assert summary.endswith("。" + ELLIPSIS)
    assert text.startswith(summary[:-1])
