"""The selection catalogues through the other interfaces, against the shared stack: the MCP tools
(list_collections, select_tools, select_index) over both real transports, the SDK's tool import
and ``edgeindex tools import FILE`` with an MCP tools/list result and an OpenAI tools array."""

from __future__ import annotations

import json

from edgeindex import cli
from edgeindex_client import Client

from ..helpers import new_tenant, put_document, wait_document, wait_for
from .test_mcp import call, http_session, ok, stdio_session

MCP_TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
    {"name": "get_weather", "description": "Current weather and forecast for a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "convert_currency", "description": "Convert an amount of money between two currencies.",
     "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}, "from": {"type": "string"},
                                                      "to": {"type": "string"}}}},
    {"name": "send_email", "description": "Send an email message to a recipient.",
     "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}}},
]}}
OPENAI_TOOLS = [
    {"type": "function", "function": {"name": "get_order_details", "description": "Look up an order by its id.",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "process_refund", "description": "Refund the payment of an order.",
                                      "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                                                      "amount": {"type": "number"}}}},
     "requires": ["get_order_details"]},
]


def run_cli(capsys, stack, key: str, *argv: str) -> tuple[int, str]:
    code = cli.main([*argv, "--upload-url", stack.url("upload"), "--search-url", stack.url("search"), "--api-key", key])
    return code, capsys.readouterr().out


def registered(tenant) -> set[str]:
    status, body = tenant.search.get(f"/entities/{tenant.entity_id}/tools")
    assert status == 200, body
    return {t["name"] for t in body["tools"]}


def test_cli_imports_an_mcp_tools_list_and_an_openai_tools_array(stack, upload_admin, capsys, tmp_path):
    tenant = new_tenant(stack, upload_admin, prefix="imp")
    mcp_file, openai_file = tmp_path / "mcp.json", tmp_path / "openai.json"
    mcp_file.write_text(json.dumps(MCP_TOOLS_LIST))
    openai_file.write_text(json.dumps(OPENAI_TOOLS))
    code, out = run_cli(capsys, stack, tenant.key, "tools", "import", str(mcp_file), "--entity", tenant.entity_id,
                        "--json")
    assert code == 0 and json.loads(out)["embedded"] == 3, out
    code, out = run_cli(capsys, stack, tenant.key, "tools", "import", str(openai_file), "--entity", tenant.entity_id)
    assert code == 0 and "2 tools registered" in out and "2 embedded" in out, out
    assert registered(tenant) == {"get_weather", "convert_currency", "send_email", "get_order_details",
                                  "process_refund"}
    # again: nothing changed, nothing embedded
    code, out = run_cli(capsys, stack, tenant.key, "tools", "import", str(openai_file), "--entity", tenant.entity_id,
                        "--json")
    assert code == 0 and (json.loads(out)["embedded"], json.loads(out)["unchanged"]) == (0, 2)
    status, body = tenant.search.post("/tools/select", {"query": "refund order 1234", "entity_ids": [tenant.entity_id],
                                                        "k": 1})
    assert status == 200 and {"process_refund", "get_order_details"} <= {t["name"] for t in body["tools"]}

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"functions": []}))
    code, _ = run_cli(capsys, stack, tenant.key, "tools", "import", str(bad), "--entity", tenant.entity_id)
    assert code == 2


def test_sdk_import_tools_and_collections(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="imp")
    with Client(tenant.key, upload_url=stack.url("upload"), search_url=stack.url("search")) as client:
        answer = client.import_tools(tenant.entity_id, MCP_TOOLS_LIST)
        assert (answer.registered, answer.embedded) == (3, 3)
        assert client.list_collections(tenant.entity_id).collections == []
        described = client.describe_collection(tenant.entity_id, "travel", "Trips, flights and hotel bookings.")
        assert described.name == "travel" and described.profile["documents"] == 0
        assert [c.name for c in client.list_collections(tenant.entity_id).collections] == ["travel"]
    assert registered(tenant) == {"get_weather", "convert_currency", "send_email"}


async def test_mcp_selection_tools_over_both_transports(stack, upload_admin, tmp_path):
    tenant = new_tenant(stack, upload_admin, prefix="mcpsel")
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", MCP_TOOLS_LIST)
    assert status == 200, body
    put_document(tenant, "trip.md", "Flight to Lisbon on Friday, hotel near the river, museum tickets booked.",
                 content_type="text/markdown", collection="travel")
    await wait_document(tenant, "trip.md")

    def profiled():
        status, body = tenant.search.get(f"/entities/{tenant.entity_id}/collections")
        return status == 200 and body["collections"] and body["collections"][0]["profile"]
    await wait_for(profiled, timeout=60)

    with open(tmp_path / "stderr.log", "w") as errlog:
        for session_of in (lambda: http_session(stack, tenant.key), lambda: stdio_session(stack, tenant.key, errlog)):
            async with session_of() as session:
                chosen = await ok(session, "select_tools", {"query": "what's the weather in Oslo tomorrow", "k": 1})
                assert chosen["tools"][0]["name"] == "get_weather" and chosen["tokens"]["registry"] > 0
                # what a model reads: definitions and reasons; the breakdowns only when asked
                assert chosen["tools"][0]["definition"]["name"] == chosen["tools"][0]["alias"] == "get_weather"
                assert "timings" not in chosen and "scores" not in chosen["tools"][0], chosen
                detailed = await ok(session, "select_tools", {"query": "what's the weather in Oslo tomorrow", "k": 1,
                                                              "diagnostics": True})
                assert "timings" in detailed and "scores" in detailed["tools"][0], detailed
                ranked = await ok(session, "select_index", {"query": "which hotel did I book in Lisbon"})
                assert ranked["indices"][0]["name"] == "travel" and ranked["indices"][0]["kind"] == "collection"
                listed = await ok(session, "list_collections", {"entity_id": tenant.entity_id})
                assert [c["name"] for c in listed["collections"]] == ["travel"]
                error, body = await call(session, "select_tools", {"query": "", "k": 1})
                assert error and body["field"] == "query"

    other = new_tenant(stack, upload_admin, prefix="mcpsel")
    async with http_session(stack, other.key) as session:
        error, body = await call(session, "list_collections", {"entity_id": tenant.entity_id})
        assert error and (body["error"], body["field"]) == ("forbidden", "entity_id")
        error, body = await call(session, "select_index", {"query": "hotel in Lisbon", "entity_ids": [tenant.entity_id]})
        assert error and body["field"] == "entity_ids"
        assert (await ok(session, "select_tools", {"query": "weather in Oslo"}))["tools"] == []


def test_uploads_name_their_collection_from_the_cli_and_the_sdk(stack, upload_admin, capsys, tmp_path):
    tenant = new_tenant(stack, upload_admin, prefix="imp")
    folder = tmp_path / "manuals"
    folder.mkdir()
    (folder / "pump.md").write_text("# Pump\n\nBleed the pump before the first start.")
    code, out = run_cli(capsys, stack, tenant.key, "upload", str(folder), "--entity", tenant.entity_id,
                        "--collection", "manuals", "--json")
    assert code == 0, out
    with Client(tenant.key, upload_url=stack.url("upload"), search_url=stack.url("search")) as client:
        assert client.get_document(tenant.entity_id, "pump.md").collection == "manuals"
        client.upload_bytes(tenant.entity_id, "valve.md", b"# Valve\n\nClose the valve.", content_type="text/markdown",
                            mode="presigned", collection="manuals")
        assert client.get_document(tenant.entity_id, "valve.md").collection == "manuals"
