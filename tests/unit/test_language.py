"""Language detection and segmentation for full text (shared/language.py): the real detector
and segmenter, no database."""

from __future__ import annotations

import pytest
from edgeindex import language

GERMAN = ("Die Stadtverwaltung ließ im vergangenen Jahr dreihundert neue Häuser für junge Familien bauen. "
          "Die Mieten in den großen Städten steigen seit Jahren.")
FRENCH = ("Le conseil municipal a approuvé un nouveau budget pour les transports publics. Les bus "
          "circuleront plus souvent le week-end.")
ENGLISH = ("The city council approved a new budget for public transport. Buses will run more often on "
           "weekends, and the tram line to the airport opens next spring.")
CHINESE = "黑豹队的防守只丢了308分，在联赛中排名第六，同时也以24次拦截领先国家橄榄球联盟，并且四次入选职业碗。"


@pytest.mark.parametrize(("text", "code", "config"), [
    (GERMAN, "de", "german"), (FRENCH, "fr", "french"), (ENGLISH, "en", "english"), (CHINESE, "zh", "simple"),
])
def test_paragraphs_get_their_language_and_configuration(text, code, config):
    (chunk,) = language.analyse(text, [text])
    assert (chunk.language, chunk.text_config) == (code, config)


def test_a_chunk_too_short_to_judge_takes_its_documents_language():
    short = "Ja, bitte."  # too few characters to say anything on its own
    chunks = language.analyse(GERMAN + " " + short, [GERMAN, short])
    assert [c.language for c in chunks] == ["de", "de"]


def test_a_clear_chunk_in_another_language_keeps_its_own():
    chunks = language.analyse(GERMAN * 3 + ENGLISH, [GERMAN, ENGLISH])
    assert [c.text_config for c in chunks] == ["german", "english"]


def test_undetermined_text_falls_back_to_the_default_language():
    (chunk,) = language.analyse("12 34 56 -- 78", ["12 34 56 -- 78"])
    assert (chunk.language, chunk.text_config) == (language.DEFAULT_LANGUAGE, "english")


def test_languages_without_a_stemmer_are_simple():
    assert language.text_config("ja") == "simple"
    assert language.text_config("la") == "simple"
    assert language.text_config(None) == "english"  # the default


def test_spaced_scripts_are_left_as_they_are():
    assert language.segment(GERMAN) is None
    assert language.lexical_text(ENGLISH) == ENGLISH


def test_chinese_is_cut_into_dictionary_words_and_the_rest_kept():
    segmented = language.segment("托马斯·戴维斯有多少次迫使掉球？ NFL 2015")
    words = segmented.split()
    assert {"戴维斯", "多少", "迫使"} <= set(words)
    assert "NFL" in words and "2015" in words        # other scripts untouched
    assert "有多少次迫使掉球" not in segmented          # no clause left whole


def test_kana_and_thai_runs_become_bigrams():
    assert language.segment("すもも").split() == ["すも", "もも"]
    assert language.segment("ภาษา").split() == ["ภา", "าษ", "ษา"]
    assert language.segment("を").split() == ["を"]    # a single character stays one word


def test_a_query_is_cut_exactly_as_the_document_holding_it():
    # search passes lexical_text(query); ingestion stores segment(chunk): one function
    query = "黑豹队的防守"
    assert language.lexical_text(query) == language.segment(query)
    assert set(language.lexical_text(query).split()) <= set(language.segment(CHINESE).split())


def test_long_documents_are_judged_on_evenly_spaced_windows():
    text = "a" * 5000 + "b" * 5000 + "c" * 5000
    sampled = language.sample(text, windows=3, size=100)
    assert sampled.split("\n") == ["a" * 100, "b" * 100, "c" * 100]
    assert language.sample("short", windows=3, size=100) == "short"
