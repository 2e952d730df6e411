"""Tool and index selection in other languages, over HTTP against the shared real stack.

The model (all-MiniLM-L6-v2) was trained on English: for a Chinese or German request its vectors say
little, and the words must meet. Each test asserts the words the route says it matched
(``matched_terms``, ``evidence``), which only language-aware terms produce: a Chinese clause cut into
words (language.segment), a German word stemmed as German (selection/text.py).
"""

from __future__ import annotations

import pytest

from ..helpers import new_tenant

PARAMS = {"type": "object", "properties": {"query": {"type": "string"}}}

CHINESE = [
    {"name": "weather_lookup", "description": "查询指定城市今天和未来几天的天气预报，包括气温和降雨概率。", "parameters": PARAMS},
    {"name": "send_mail", "description": "向指定的收件人发送一封电子邮件，可以附带附件。", "parameters": PARAMS},
    {"name": "train_tickets", "description": "查询两个城市之间的火车时刻表并预订车票。", "parameters": PARAMS},
    {"name": "exchange_rate", "description": "把一种货币的金额按照最新汇率换算成另一种货币。", "parameters": PARAMS},
    {"name": "stock_quote", "description": "获取某只股票的最新价格和成交量。", "parameters": PARAMS},
    {"name": "translate", "description": "把一段文字从一种语言翻译成另一种语言。", "parameters": PARAMS},
]

GERMAN = [
    {"name": "billing_create", "description": "Erstellt eine neue Rechnung für einen Kunden und verschickt sie per Post.",
     "parameters": PARAMS},
    {"name": "weather_forecast", "description": "Liefert die Wettervorhersage für eine Stadt mit Temperatur und Niederschlag.",
     "parameters": PARAMS},
    {"name": "calendar_entry", "description": "Trägt einen Termin mit Uhrzeit und Ort in den Kalender ein.",
     "parameters": PARAMS},
    {"name": "parcel_tracking", "description": "Verfolgt ein Paket anhand seiner Sendungsnummer bis zur Zustellung.",
     "parameters": PARAMS},
    {"name": "flight_search", "description": "Sucht Flüge zwischen zwei Flughäfen an einem bestimmten Datum.",
     "parameters": PARAMS},
    {"name": "contract_archive", "description": "Speichert unterschriebene Verträge im Archiv des Unternehmens.",
     "parameters": PARAMS},
]


def _register_tools(tenant, tools):
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", {"tools": tools})
    assert status == 200, body


def _select_tools(tenant, query, k=3):
    status, body = tenant.search.post("/tools/select", {"query": query, "entity_ids": [tenant.entity_id], "k": k})
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def chinese_tools(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools-zh")
    _register_tools(tenant, CHINESE)
    return tenant


@pytest.fixture(scope="module")
def german_tools(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools-de")
    _register_tools(tenant, GERMAN)
    return tenant


def test_a_chinese_request_finds_the_chinese_described_tool_by_its_words(chinese_tools):
    body = _select_tools(chinese_tools, "帮我看看上海明天的天气预报")
    first = body["tools"][0]
    assert first["name"] == "weather_lookup"
    # the request and the description meet on words jieba cut out of both clauses
    assert "天气" in first["matched_terms"] and "预报" in first["matched_terms"]

    mail = _select_tools(chinese_tools, "请给王经理发一封电子邮件")
    assert mail["tools"][0]["name"] == "send_mail"
    assert {"电子", "邮件"} <= set(mail["tools"][0]["matched_terms"])


def test_a_german_inflected_word_finds_the_tool_with_another_form(german_tools):
    # "Rechnungen" (plural) against "Rechnung"; "Verträge" against "Verträge" is plain, "Pakete" against "Paket"
    body = _select_tools(german_tools, "Ich brauche zwei Rechnungen für meine Kunden")
    first = body["tools"][0]
    assert first["name"] == "billing_create"
    assert "rechnung" in first["matched_terms"]

    parcel = _select_tools(german_tools, "Wo sind meine Pakete gerade?")
    assert parcel["tools"][0]["name"] == "parcel_tracking"
    assert "pak" in parcel["tools"][0]["matched_terms"]   # German stems of "Pakete" and "Paket"


def test_index_selection_in_chinese_and_german_names_its_evidence(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="idx-lang")
    indices = [
        {"name": "kundenrechnungen", "description": "Alle Rechnungen an unsere Kunden mit Beträgen und Fälligkeiten.",
         "fields": ["rechnungsnummer", "kunde", "betrag"]},
        {"name": "lagerbestand", "description": "Der aktuelle Bestand jedes Artikels in unseren Lagern.",
         "fields": ["artikel", "menge", "lager"]},
        {"name": "zh_weather", "description": "各个城市每天的天气记录，包括最高气温和最低气温。", "fields": ["city", "date"]},
        {"name": "zh_orders", "description": "网上商店的订单记录，包括订单金额和配送地址。", "fields": ["order_id", "amount"]},
    ]
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/indices", {"indices": indices})
    assert status == 200, body

    def first(query):
        status, body = tenant.search.post("/indices/select", {"query": query, "entity_ids": [tenant.entity_id], "k": 2})
        assert status == 200, body
        return body["indices"][0]

    german = first("Welche Rechnung ist noch offen?")
    assert german["name"] == "kundenrechnungen" and "rechnung" in german["evidence"]["description"]
    chinese = first("昨天北京的最高气温是多少")
    assert chinese["name"] == "zh_weather" and "气温" in chinese["evidence"]["description"]
