"""Tools named as real catalogues name them (``PDF&URLTool``, ``weather.get current``): registered under
their own names, handed to LLMs under an alias of the model APIs' shape, and fed back by either."""

from __future__ import annotations

import json
import re

import pytest

from ..helpers import new_tenant
from .test_selection_interfaces import run_cli

ALIAS = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PDF = {"name": "PDF&URLTool", "description": "Download a PDF document from a web URL and extract its text.",
       "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}
WEATHER = {"name": "weather.get current", "description": "Current weather conditions and temperature in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
LONG = {"name": "Ünïcode tool " + "with a very long name " * 8, "description": "Count the words of a text."}
PLAIN = {"name": "send_email", "description": "Send an email message to a recipient address."}
OTHERS = [{"name": f"tool_{word}", "description": f"Do something about {word}."}
          for word in ("invoices", "calendars", "flights", "stocks", "images", "zodiac")]


@pytest.fixture(scope="module")
def named(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="names")
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools",
                                      {"tools": [PDF, WEATHER, LONG, PLAIN, *OTHERS]})
    assert status == 200, body
    return tenant, {t["name"]: t["alias"] for t in body["tools"]}


def test_real_world_names_are_registered_with_an_alias_of_the_model_apis_shape(named):
    tenant, aliases = named
    status, listing = tenant.search.get(f"/entities/{tenant.entity_id}/tools")
    assert status == 200, listing
    listed = {t["name"]: t["alias"] for t in listing["tools"]}
    assert listed == aliases and len(listed) == 3 + 1 + len(OTHERS)
    assert all(ALIAS.match(alias) for alias in listed.values()), listed
    assert len(set(listed.values())) == len(listed)             # unique in the entity
    assert listed["send_email"] == "send_email"                  # a name of that shape is its own alias
    assert listed["PDF&URLTool"].startswith("PDF_URLTool_") and listed["weather.get current"].startswith(
        "weather_get_current_")
    assert len(listed[LONG["name"].strip()]) == 64


def test_registering_again_keeps_the_aliases(named):
    tenant, aliases = named
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", {"tools": [PDF, WEATHER]})
    assert status == 200 and body["unchanged"] == 2, body
    assert {t["name"]: t["alias"] for t in body["tools"]} == {n: aliases[n] for n in (PDF["name"], WEATHER["name"])}


def test_a_name_that_is_another_tools_alias_gets_its_own(named):
    tenant, aliases = named
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools",
                                      {"tool": {"name": aliases["PDF&URLTool"], "description": "A decoy."}})
    assert status == 200, body
    decoy = body["tools"][0]
    assert decoy["name"] == aliases["PDF&URLTool"] and ALIAS.match(decoy["alias"])
    assert decoy["alias"] != aliases["PDF&URLTool"]
    status, listing = tenant.search.get(f"/entities/{tenant.entity_id}/tools")
    assert len({t["alias"] for t in listing["tools"]}) == listing["count"]
    assert tenant.search.delete(f"/entities/{tenant.entity_id}/tools/{aliases['PDF&URLTool']}")[0] == 200


def test_selection_shows_name_and_alias_and_feedback_takes_the_alias(named):
    tenant, aliases = named
    status, body = tenant.search.post("/tools/select", {"query": "extract the text of the PDF at this URL",
                                                        "entity_ids": [tenant.entity_id], "k": 2})
    assert status == 200, body
    first = body["tools"][0]
    assert (first["name"], first["alias"]) == ("PDF&URLTool", aliases["PDF&URLTool"])
    assert first["definition"]["name"] == aliases["PDF&URLTool"]   # what an LLM API is given
    status, answer = tenant.search.post("/tools/feedback", {
        "query": "extract the text of the PDF at this URL", "entity_ids": [tenant.entity_id],
        "used": [aliases["PDF&URLTool"]], "selected": [aliases["PDF&URLTool"], "weather.get current"]})
    assert status == 200, answer
    assert answer["recorded"] == {"used": ["PDF&URLTool"], "shown": ["PDF&URLTool", "weather.get current"]}
    status, answer = tenant.search.post("/tools/feedback", {
        "query": "x", "entity_ids": [tenant.entity_id], "used": ["PDF_URLTool_00000000"]})
    assert status == 400 and answer["field"] == "used.0", answer


def test_cli_imports_an_mcp_catalogue_with_such_names(stack, upload_admin, capsys, tmp_path):
    tenant = new_tenant(stack, upload_admin, prefix="names")
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "PDF&URLTool", "description": PDF["description"], "inputSchema": PDF["parameters"]},
        {"name": "weather.get current", "description": WEATHER["description"], "inputSchema": WEATHER["parameters"]},
    ]}}))
    code, out = run_cli(capsys, stack, tenant.key, "tools", "import", str(listed), "--entity", tenant.entity_id,
                        "--json")
    assert code == 0, out
    answer = json.loads(out)
    assert answer["registered"] == 2 and [t["name"] for t in answer["tools"]] == ["PDF&URLTool", "weather.get current"]
    assert all(ALIAS.match(t["alias"]) for t in answer["tools"])


@pytest.mark.parametrize("raw, field", [
    (b'{"tools": [{"name": ""}]}', "tools.0.name"),
    (b'{"tools": [{"name": "ok"}, {"name": "nul\\u0000here"}]}', "tools.1.name"),
    (b'{"tools": [{"name": "lone \\ud800 surrogate"}]}', "tools.0.name"),
    (b'{"tools": [{"name": "bell\\u0007"}]}', "tools.0.name"),
    (b'{"tools": [{"name": "del\\u007f"}]}', "tools.0.name"),
    (b'{"tool": {"name": 5}}', "tool.name"),
])
def test_bad_names_are_400_naming_the_field(stack, upload_admin, raw, field):
    tenant = new_tenant(stack, upload_admin, prefix="names")
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", raw=raw,
                                      headers={"Content-Type": "application/json"})
    assert status == 400 and body["field"] == field, body
    assert tenant.search.get(f"/entities/{tenant.entity_id}/tools")[1]["count"] == 0


async def test_the_migration_gives_stored_tools_the_aliases_the_code_gives(db):
    """0024 computes the aliases of tools stored before it in SQL: the same formula as aliases.alias_for."""
    from edgeindex.bindings.database import migrations_folder
    from edgeindex.selection.aliases import alias_for

    text = (migrations_folder() / "0024_tool_aliases.sql").read_text(encoding="utf-8")
    expression = re.search(r"SET alias = (CASE .*? END)", text, re.S).group(1)
    names = ["get_weather", "calendar.create_event", "math:hypot", "PDF&URLTool", "weather.get current",
             "a" * 64, "a" * 65, "ns." + "x" * 120, "Ünïcode–tool"]
    rows = await db.fetch(f"SELECT name, {expression} AS alias FROM unnest(%(names)s::text[]) AS name",
                          {"names": names})
    assert {r["name"]: r["alias"] for r in rows} == {n: alias_for(n) for n in names}
