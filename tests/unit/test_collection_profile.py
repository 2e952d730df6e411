"""Pure pieces of collections: the profile built from what the database returns, and the SDK's
reading of exported tool catalogues."""

from __future__ import annotations

import pytest
from edgeindex.selection.collections import build_profile
from edgeindex.selection.indices import IndexDef, parts
from edgeindex_client._base import tools_from


def test_profile_counts_labels_and_summarizes_the_summaries():
    documents = [
        {"title": "Order A", "source": "erp", "tags": ["shop", "orders"],
         "summary": "Order A was refunded after the parcel arrived damaged. The customer paid by card."},
        {"title": "Order B", "source": "erp", "tags": ["orders"],
         "summary": "Order B shipped with postnord and arrived on time."},
        {"title": "", "source": "crm", "tags": [], "summary": ""},
    ]
    terms = [{"term": "refund", "word": "refunded"}, {"term": "parcel", "word": "parcel"},
             {"term": "refund", "word": "refunded"}]
    fields = [{"path": "customer.email", "n": 2}, {"path": "items.sku", "n": 2}]
    profile = build_profile("Orders", documents, terms, fields, {"ready": 3, "total": 4})
    assert profile.fields == ["customer.email", "items.sku"]
    assert profile.profile["documents"] == 3
    assert profile.profile["tags"][0] == "orders" and set(profile.profile["tags"]) == {"orders", "shop"}
    assert profile.profile["sources"] == ["erp", "crm"]
    assert profile.profile["terms"] == ["refunded", "parcel"]          # distinct, in order
    assert profile.profile["titles"] == ["Order A", "Order B"]
    summary = profile.profile["summary"]
    # sentences of the documents' summaries, from more than one document
    assert "Order A was refunded after the parcel arrived damaged." in summary and "Order B shipped" in summary


def test_profile_without_summaries_has_an_empty_summary():
    profile = build_profile("", [{"title": "", "source": "", "tags": None, "summary": None}], [], [],
                            {"ready": 1, "total": 1})
    assert profile.profile["summary"] == "" and profile.profile["tags"] == [] and profile.profile["sources"] == []


def test_a_collections_json_paths_are_not_table_parts():
    fields = ("customer.email", "customer.country", "items.sku")
    assert parts(IndexDef("orders", "", fields, kind="collection")) == {}
    assert set(parts(IndexDef("shop_db", "", fields))) == {"customer", "items"}   # an external database's tables


@pytest.mark.parametrize("document", [
    {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}]}},
    {"tools": [{"name": "a"}]},
    [{"type": "function", "function": {"name": "a"}}],
])
def test_sdk_reads_mcp_and_openai_tool_exports(document):
    assert len(tools_from(document)) == 1


@pytest.mark.parametrize("document", [{"functions": []}, [1], "tools"])
def test_sdk_refuses_what_is_no_tool_export(document):
    with pytest.raises(ValueError):
        tools_from(document)
