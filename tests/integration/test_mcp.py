"""The MCP server with the SDK's own client over both real transports against the shared stack:
streamable HTTP (the mcp worker) and stdio (`edgeindex mcp`, a subprocess bridged to it)."""

from __future__ import annotations

import contextlib
import json
import sys

import anyio
import httpx2
import jsonschema
import pytest
from edgeindex.mcp_server.tools import TOOLS
from edgeindex.trajectories.service import TrajectorySearchRequest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from ..helpers import Client, new_tenant, paragraph, wait_for

TOOL_NAMES = {"search", "get_document", "get_chunk", "expand", "trajectory", "upload_text", "document_status",
              "list_documents", "list_collections", "select_tools", "find_tools", "select_index", "feedback",
              "changes"}


def mcp_url(stack) -> str:
    return stack.url("mcp") + "/mcp"


@contextlib.asynccontextmanager
async def http_session(stack, key: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
        async with streamable_http_client(mcp_url(stack), http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def stdio_session(stack, key: str, errlog):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "edgeindex.cli", "mcp", "--api-key", key, "--url", mcp_url(stack)])
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
            yield session


async def call(session: ClientSession, name: str, arguments: dict) -> tuple[bool, dict]:
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1, result
    return result.is_error, json.loads(result.content[0].text)


async def ok(session: ClientSession, name: str, arguments: dict) -> dict:
    error, body = await call(session, name, arguments)
    assert not error, body
    return body


TOPICS = ["harbours", "glaciers", "orchards"]
TEXT = "\n\n".join(paragraph(t, word="feed") for t in TOPICS)  # three paragraphs: three chunks in order


@pytest.fixture(scope="module")
async def indexed(stack, upload_admin):
    """A tenant with one document uploaded over MCP (upload_text) and polled ready over MCP."""
    tenant = new_tenant(stack, upload_admin, prefix="mcp")
    async with http_session(stack, tenant.key) as session:
        doc = await ok(session, "upload_text", {"entity_id": tenant.entity_id, "document_id": "notes/field guide.md",
                                                "text": TEXT, "content_type": "text/markdown",
                                                "title": "Field guide", "tags": ["guide"]})
        assert (doc["status"], doc["version"], doc["title"]) == ("pending", 1, "Field guide")

        async def ready():
            status = await ok(session, "document_status", {"entity_id": tenant.entity_id,
                                                          "document_id": "notes/field guide.md"})
            assert status["status"] != "failed", status
            return status if status["status"] == "ready" else None

        status = await wait_for(ready, timeout=120, interval=0.5)
    assert status["chunk_count"] == len(TOPICS)
    return tenant


async def test_http_lists_tools_with_the_route_models_schemas(stack, indexed):
    async with http_session(stack, indexed.key) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    # generated from the very model POST /search validates with: every field, nothing invented
    assert set(tools["search"].input_schema["properties"]) == (set(TrajectorySearchRequest.model_fields)
                                                              | {"diagnostics"})
    assert tools["search"].input_schema["required"] == ["query"]
    for name, tool in tools.items():
        assert set(tool.input_schema["properties"]) == set(TOOLS[name][0].model_fields), name
        assert tool.description


async def test_search_answers_compact_structured_content_and_diagnostics_when_asked(stack, indexed):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {indexed.key}"}, timeout=120) as http:
        async with streamable_http_client(mcp_url(stack), http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                hello = await session.initialize()
                # the newest revision the SDK's client offers in the initialize handshake is the one agreed
                assert "2025-11-25" in HANDSHAKE_PROTOCOL_VERSIONS
                assert hello.protocol_version == LATEST_HANDSHAKE_VERSION == "2025-11-25"
                tools = {t.name: t for t in (await session.list_tools()).tools}
                schema = tools["search"].output_schema
                assert schema is not None and schema["required"] == ["count", "results"]
                compact = await session.call_tool("search", {"query": "how glaciers feed the land", "k": 3})
                full = await session.call_tool("search", {"query": "how glaciers feed the land", "k": 3,
                                                          "diagnostics": True})
                error, bad = await call(session, "search", {"query": "x", "diagnostics": "yes"})
    assert error and bad["field"] == "diagnostics", bad
    for result in (compact, full):
        assert not result.is_error and result.structured_content is not None
        jsonschema.validate(result.structured_content, schema)
        assert json.loads(result.content[0].text) == result.structured_content
    small, large = compact.structured_content, full.structured_content
    assert small["count"] == len(small["results"]) == 3
    top = small["results"][0]
    assert set(top) >= {"chunk_id", "document_id", "title", "score", "snippet", "citation"}
    assert top["title"] == "Field guide" and top["citation"]["position"] == 1
    assert "diagnostics" not in small and "routing" not in compact.content[0].text
    status, over_http = Client(stack.url("search"), indexed.key).post("/search", {"query": "how glaciers feed the land",
                                                                                "k": 3})
    assert status == 200 and "routing" in over_http, over_http
    # everything the HTTP answer says besides the results is in the diagnostics, and only there
    assert set(large["diagnostics"]) == set(over_http) - {"results", "count", "search_id", "corrections"}
    assert "routing" in large["diagnostics"] and "routing" not in small
    assert [r["chunk_id"] for r in large["results"]] == [r["chunk_id"] for r in small["results"]]
    # the compact answer is under half of what the search service answers (whole texts, scores, routing,
    # which MCP clients were sent as it is), and asking for the diagnostics adds at least the routing
    sizes = [len(x.encode()) for x in (compact.content[0].text, full.content[0].text, json.dumps(over_http))]
    assert sizes[0] * 2 < sizes[2], sizes
    assert sizes[1] - sizes[0] >= len(json.dumps(over_http["routing"], separators=(",", ":"))), sizes


async def test_http_calls_every_tool_and_sees_what_http_sees(stack, indexed):
    entity = indexed.entity_id
    body = {"query": "how glaciers feed the land", "k": 3}
    status, over_http = Client(stack.url("search"), indexed.key).post("/search", body)
    assert status == 200, over_http
    async with http_session(stack, indexed.key) as session:
        found = await ok(session, "search", body)
        # the same search over MCP and over HTTP with the same key: the same chunks in the same order
        assert [r["chunk_id"] for r in found["results"]] == [r["chunk_id"] for r in over_http["results"]]
        top = found["results"][0]
        assert (top["document_id"], top["citation"]["position"]) == ("notes/field guide.md", 1)
        judged = await ok(session, "feedback", {"search_id": found["search_id"], "useful": [top["chunk_id"]]})
        assert judged["search_id"] == found["search_id"] and judged["rewards"], judged
        error, bad = await call(session, "feedback", {"search_id": found["search_id"],
                                                      "useful": ["00000000-0000-0000-0000-000000000000"]})
        assert error and (bad["error"], bad["field"]) == ("invalid_request", "useful")

        chunk = await ok(session, "get_chunk", {"entity_id": entity, "chunk_id": top["chunk_id"], "neighbours": 1})
        assert (chunk["chunk_id"], chunk["position"]) == (top["chunk_id"], 1)
        assert "glaciers" in chunk["text"]
        assert [n["position"] for n in chunk["before"]] == [0] and "harbours" in chunk["before"][0]["text"]
        assert [n["position"] for n in chunk["after"]] == [2] and "orchards" in chunk["after"][0]["text"]
        alone = await ok(session, "get_chunk", {"entity_id": entity, "chunk_id": top["chunk_id"], "neighbours": 0})
        assert (alone["before"], alone["after"]) == ([], [])

        page = await ok(session, "get_document", {"entity_id": entity, "document_id": "notes/field guide.md",
                                                  "limit": 2})
        assert (page["title"], page["tags"], page["status"]) == ("Field guide", ["guide"], "ready")
        assert [c["position"] for c in page["chunks"]] == [0, 1] and page["next_offset"] == 2
        rest = await ok(session, "get_document", {"entity_id": entity, "document_id": "notes/field guide.md",
                                                  "offset": 2})
        assert [c["position"] for c in rest["chunks"]] == [2] and rest["next_offset"] is None
        assert "orchards" in rest["chunks"][0]["text"]

        listed = await ok(session, "list_documents", {"entity_id": entity, "status": "ready"})
        assert [d["document_id"] for d in listed["documents"]] == ["notes/field guide.md"]
        again = await ok(session, "upload_text", {"entity_id": entity, "document_id": "notes/field guide.md",
                                                  "text": TEXT, "content_type": "text/markdown"})
        assert (again["unchanged"], again["version"]) == (True, 1)

        # bad input: the HTTP API's error code and field, as a tool error the agent can correct
        error, bad = await call(session, "search", {"query": "x", "k": "5"})
        assert error and (bad["error"], bad["field"]) == ("invalid_request", "k")
        error, bad = await call(session, "get_chunk", {"entity_id": entity, "chunk_id": "not-a-uuid"})
        assert error and (bad["error"], bad["field"]) == ("invalid_request", "chunk_id")


async def test_http_refuses_an_unknown_key(stack):
    with pytest.raises(Exception) as refused:
        async with http_session(stack, "ei_not-a-key"):
            pass
    # the SDK's client raises the server's JSON-RPC error, with the reason
    assert "unauthorized: unknown or revoked API key" in " | ".join(leaf_messages(refused.value))
    for headers in ({"Authorization": "Bearer ei_not-a-key"}, {}):
        status, body = Client(stack.url("mcp")).post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                                     headers=headers)
        assert status == 401, body
        assert (body["error"]["data"]["error"], body["error"]["data"]["field"]) == ("unauthorized", "Authorization")


def leaf_messages(exc: BaseException) -> list[str]:
    if isinstance(exc, BaseExceptionGroup):
        return [m for e in exc.exceptions for m in leaf_messages(e)]
    return [str(exc)]


async def test_http_refuses_a_foreign_entity(stack, upload_admin, indexed):
    other = new_tenant(stack, upload_admin, prefix="mcpx")
    entity = indexed.entity_id
    async with http_session(stack, indexed.key) as session:
        theirs = await ok(session, "search", {"query": "glaciers", "k": 1})
        chunk_id = theirs["results"][0]["chunk_id"]
    async with http_session(stack, other.key) as session:
        # another tenant's search cannot be judged: it does not exist for this key
        error, body = await call(session, "feedback", {"search_id": theirs["search_id"], "useful": [chunk_id]})
        assert error and body["error"] == "not_found", body
        for name, args in [("search", {"query": "glaciers", "entity_ids": [entity]}),
                           ("get_chunk", {"entity_id": entity, "chunk_id": chunk_id}),
                           ("get_document", {"entity_id": entity, "document_id": "notes/field guide.md"}),
                           ("document_status", {"entity_id": entity, "document_id": "notes/field guide.md"}),
                           ("list_documents", {"entity_id": entity}),
                           ("upload_text", {"entity_id": entity, "document_id": "planted", "text": "x"})]:
            error, body = await call(session, name, args)
            assert error and body["error"] == "forbidden", (name, body)
            assert body["field"] == ("entity_ids" if name == "search" else "entity_id"), (name, body)
        # its own entity with the other tenant's chunk id: nothing (the chunk is scoped by entity)
        error, body = await call(session, "get_chunk", {"entity_id": other.entity_id, "chunk_id": chunk_id})
        assert error and (body["error"], body["field"]) == ("not_found", "chunk_id")
        # and its own search never returns the other tenant's chunk
        mine = await ok(session, "search", {"query": "glaciers feed the land"})
        assert mine["results"] == []


async def test_stdio_bridge_lists_and_calls_tools_with_the_keys_grants(stack, upload_admin, indexed, tmp_path):
    other = new_tenant(stack, upload_admin, prefix="mcpx")
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with http_session(stack, indexed.key) as session:
            over_http = await session.list_tools()
        async with stdio_session(stack, indexed.key, errlog) as session:
            over_stdio = await session.list_tools()
            assert [t.model_dump() for t in over_stdio.tools] == [t.model_dump() for t in over_http.tools]
            found = await ok(session, "search", {"query": "how orchards feed the land", "k": 1})
            assert (found["results"][0]["document_id"], found["results"][0]["citation"]["position"]) == (
                "notes/field guide.md", 2)
            status = await ok(session, "document_status", {"entity_id": indexed.entity_id,
                                                          "document_id": "notes/field guide.md"})
            assert status["status"] == "ready"
        async with stdio_session(stack, other.key, errlog) as session:
            error, body = await call(session, "document_status", {"entity_id": indexed.entity_id,
                                                                  "document_id": "notes/field guide.md"})
            assert error and (body["error"], body["field"]) == ("forbidden", "entity_id")


async def test_stdio_bridge_refuses_an_unknown_key_at_start(stack, tmp_path):
    log = tmp_path / "stderr.log"
    with open(log, "w") as errlog, pytest.raises(Exception):  # noqa: B017 - the SDK raises its own kinds
        async with stdio_session(stack, "ei_not-a-key", errlog):
            pass
    assert "refused to start an MCP session: unauthorized: unknown or revoked API key" in log.read_text()


# --- MCP and HTTP agree on bad input ------------------------------------------------------------

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tools_call(name: str, arguments: dict, rid: object = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def raw_mcp(stack, content: bytes, *, key: str | None, headers: dict | None = None) -> httpx2.Response:
    sent = {**ACCEPT, **({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(mcp_url(stack), content=content, headers=sent)


@pytest.mark.parametrize("tool, route", [("search", "/search"), ("select_tools", "/tools/select")])
async def test_a_nul_in_a_query_is_refused_naming_the_field_as_over_http(stack, indexed, tool, route):
    arguments = {"query": "glaciers\x00feed", "entity_ids": [indexed.entity_id]}
    status, over_http = indexed.search.post(route, arguments)
    assert (status, over_http["field"]) == (400, "query"), over_http
    async with http_session(stack, indexed.key) as session:
        error, body = await call(session, tool, arguments)
    assert error and (body["error"], body["field"]) == (over_http["error"], "query"), body


@pytest.mark.parametrize("tool, route", [("search", "/search"), ("select_tools", "/tools/select")])
async def test_a_lone_surrogate_in_a_query_is_refused_naming_the_field_as_over_http(stack, indexed, tool, route):
    # no client library encodes a lone surrogate; it arrives as a JSON escape
    arguments = '{"query": "glaciers \\ud800 feed", "entity_ids": [' + json.dumps(indexed.entity_id) + ']}'
    status, over_http = indexed.search.post(route, raw=arguments.encode(), headers={"Content-Type": "application/json"})
    assert (status, over_http["field"]) == (400, "query"), over_http
    content = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": ' + json.dumps(tool)
               + ', "arguments": ' + arguments + '}}').encode()
    reply = await raw_mcp(stack, content, key=indexed.key)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["id"] == 7 and answer["result"]["isError"], answer
    body = json.loads(answer["result"]["content"][0]["text"])
    assert (body["error"], body["field"]) == (over_http["error"], "query"), body


async def test_a_successful_mcp_answer_carries_its_request_id(stack, indexed):
    reply = await raw_mcp(stack, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
                          key=indexed.key)
    assert reply.status_code == 200 and reply.json()["result"]["tools"], reply.text
    assert reply.headers.get("X-Request-Id", "").startswith("req_"), dict(reply.headers)
    called = await raw_mcp(stack, json.dumps(tools_call("list_collections", {"entity_id": indexed.entity_id})
                                             ).encode(), key=indexed.key)
    assert called.status_code == 200 and called.headers.get("X-Request-Id", "").startswith("req_")


@pytest.mark.parametrize("rid", [{}, {"a": 1}, [1], True, 1.5])
async def test_a_request_whose_id_is_not_a_string_or_integer_gets_a_jsonrpc_error(stack, indexed, rid):
    reply = await raw_mcp(stack, json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/list"}).encode(),
                          key=indexed.key)
    assert reply.status_code == 400, (reply.status_code, reply.text)
    answer = reply.json()
    assert answer["id"] is None and answer["error"]["code"] == -32600, answer
    assert answer["error"]["data"]["field"] == "id", answer


async def test_a_huge_key_is_unauthorized(stack):
    reply = await raw_mcp(stack, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
                          key="ei_" + "k" * 10_000)
    assert reply.status_code == 401, reply.text
    assert reply.json()["error"]["data"]["field"] == "Authorization"
    status, body = Client(stack.url("search")).post("/search", {"query": "x"},
                                                    headers={"Authorization": "Bearer ei_" + "k" * 10_000})
    assert (status, body["field"]) == (401, "Authorization"), body


@pytest.mark.parametrize("host, status", [("[::1]:8790", 200), ("[::1]", 200), ("localhost", 200),
                                          ("localhost:abc", 400), ("localhost:99999", 400), ("[::1", 400)])
async def test_the_mcp_worker_reads_any_host_header(stack, indexed, host, status):
    reply = await raw_mcp(stack, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
                          key=indexed.key, headers={"Host": host})
    assert reply.status_code == status, reply.text
    if status == 400:
        assert reply.json()["field"] == "Host"


async def test_an_unsure_select_tools_offers_find_tools_which_loads_more(stack, indexed):
    """The deferred-loading pattern over MCP: an unsure select_tools answer holds a shortlist and the
    find_tools search tool; calling find_tools with the call's body and the model's own query loads the
    tool the task needs, never one already held."""
    entity = indexed.entity_id
    catalogue = [{"name": f"{verb}_{thing}", "description": f"{verb.capitalize()} a {thing} of the user."}
                 for verb in ("get", "create", "delete") for thing in ("invoice", "playlist", "recipe", "backup")]
    catalogue.append({"name": "get_weather", "description": "Current weather and temperature forecast for a city."})
    status, body = indexed.search.post(f"/entities/{entity}/tools", {"tools": catalogue})
    assert status == 200, body
    async with http_session(stack, indexed.key) as session:
        unsure = await ok(session, "select_tools", {"query": "qwzx plorf vrumble", "entity_ids": [entity], "k": 3})
        assert unsure["fallback"] == "not_confident_shortlist" and len(unsure["tools"]) == 3
        offered = unsure["search_tool"]
        assert offered["mcp_tool"] == "find_tools" and offered["definition"]["name"] == "find_tools"
        call_body = offered["call"]["body"]
        found = await ok(session, "find_tools", {**call_body, "query": "weather in Oslo tomorrow", "k": 2})
    names = [t["name"] for t in found["tools"]]
    assert names and names[0] == "get_weather", found
    assert not {t["name"] for t in unsure["tools"]} & set(names)
    assert "search_tool" not in found


async def test_changes_and_search_as_of_over_mcp_show_what_an_agent_read_before(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="mch")
    ref = {"entity_id": tenant.entity_id, "document_id": "plan.md"}
    async with http_session(stack, tenant.key) as session:
        for text in ("The launch is planned for March.", "The launch is planned for June."):
            doc = await ok(session, "upload_text", {**ref, "text": text})

            async def ready(version=doc["version"]):
                status = await ok(session, "document_status", ref)
                return status if status["status"] == "ready" and status["version"] == version else None

            await wait_for(ready, timeout=120, interval=0.2)
        changes = await ok(session, "changes", {**ref, "since": "1"})
        assert [(c["previous"]["text"], c["text"]) for c in changes["changed"]] == [
            ("The launch is planned for March.", "The launch is planned for June.")]
        status, versions = Client(stack.url("upload"), tenant.key).get(
            f"/entities/{tenant.entity_id}/documents/plan.md/versions")
        assert status == 200
        then = await ok(session, "search", {"query": "when is the launch", "as_of": versions["versions"][0]["live_from"]})
        assert [(r["snippet"], r["citation"]["version"]) for r in then["results"]] == [
            ("The launch is planned for March.", 1)]
        error, body = await call(session, "changes", {**ref, "since": "soon"})
        assert error and (body["error"], body["field"]) == ("invalid_request", "since")
