"""The async client's aiohttp transport to the services (edgeindex_client/_aio.py) answers as httpx did.

A real aiohttp server in the test's loop; the client under test is the real AsyncClient.
"""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from edgeindex_client import APIConnectionError, APITimeoutError, AsyncClient, BadRequestError


@pytest.fixture
async def server():
    seen: list[dict] = []

    async def record(request: web.Request) -> dict:
        body = await request.read()
        row = {"method": request.method, "path": request.path_qs, "headers": dict(request.headers), "body": body}
        seen.append(row)
        return row

    async def select(request):
        row = await record(request)
        sent = json.loads(row["body"])
        if sent.get("k") == 0:
            return web.json_response({"error": "invalid_request", "message": "k: too small", "field": "k"},
                                     status=400)
        return web.json_response({"query": sent["query"], "tools": [{"name": "get_weather", "score": 4.2}],
                                  "took_ms": 1.5})

    async def moved(request):
        await record(request)
        return web.Response(status=307, headers={"Location": "/elsewhere"})

    async def put(request):
        await record(request)
        return web.json_response({"stored": True}, headers={"ETag": '"abc"'})

    async def slow(request):
        await record(request)
        await asyncio.sleep(2)
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/tools/select", select)
    app.router.add_get("/moved", moved)
    app.router.add_get("/elsewhere", put)
    app.router.add_put("/blob", put)
    app.router.add_get("/slow", slow)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    test_server.seen = seen
    yield test_server
    await test_server.close()


def url(server) -> str:
    return f"http://127.0.0.1:{server.port}"


async def test_a_select_sends_json_with_the_key_and_parses_the_answer_and_the_servers_400(server):
    async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server), max_retries=0) as client:
        selection = await client.select_tools("weather in Paris", entity_ids=["e"], k=3)
        with pytest.raises(BadRequestError) as err:
            await client.select_tools("weather in Paris", entity_ids=["e"], k=0)
    assert [(t.name, t.score) for t in selection.tools] == [("get_weather", 4.2)]
    assert err.value.field == "k" and err.value.status == 400
    first = server.seen[0]
    assert first["headers"]["Authorization"] == "Bearer ei_k"
    assert first["headers"]["Content-Type"] == "application/json"
    assert json.loads(first["body"]) == {"query": "weather in Paris", "entity_ids": ["e"], "k": 3}


async def test_redirects_are_answered_not_followed(server):
    async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server)) as client:
        reply = await client.request("GET", "/moved", service="search")
    assert reply.status == 307 and reply.headers["location"] == "/elsewhere"
    assert [row["path"] for row in server.seen] == ["/moved"]


async def test_a_body_of_bytes_goes_without_a_content_type_it_was_not_given(server):
    async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server)) as client:
        bare = await client.request("PUT", "/blob", service="upload", content=b"\x00raw bytes")
        typed = await client.request("PUT", "/blob", service="upload", content=b"a,b",
                                     headers={"Content-Type": "text/csv"})
    assert bare.status == 200 and bare.headers["etag"] == '"abc"' and bare.body == {"stored": True}
    assert typed.status == 200
    assert "Content-Type" not in server.seen[0]["headers"] and server.seen[0]["body"] == b"\x00raw bytes"
    assert server.seen[1]["headers"]["Content-Type"] == "text/csv"


async def test_a_refused_connection_and_a_slow_answer_raise_the_clients_own_errors(server):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{free.getsockname()[1]}"
    async with AsyncClient("ei_k", search_url=closed, upload_url=closed, max_retries=0) as client:
        with pytest.raises(APIConnectionError) as refused:
            await client.health("search")
    assert not isinstance(refused.value, APITimeoutError)
    async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server), max_retries=0,
                           timeout=0.3) as client:
        with pytest.raises(APITimeoutError):
            await client.request("GET", "/slow", service="search")


async def test_a_callers_own_http_client_carries_every_call(server):
    async with httpx.AsyncClient(headers={"X-Mine": "yes"}) as http:
        async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server), http_client=http) as client:
            await client.select_tools("weather", entity_ids=["e"], k=3)
            await client.request("PUT", "/blob", service="upload", content=b"x")
    assert [row["headers"].get("X-Mine") for row in server.seen] == ["yes", "yes"]


async def test_service_calls_take_aiohttp_and_absolute_urls_httpx(server):
    async with AsyncClient("ei_k", search_url=url(server), upload_url=url(server)) as client:
        await client.select_tools("weather", entity_ids=["e"], k=3)
        await client.request("PUT", f"{url(server)}/blob", service=None, content=b"presigned")
    agents = [row["headers"].get("User-Agent", "") for row in server.seen]
    assert "aiohttp" in agents[0] and "httpx" in agents[1]
    assert "Authorization" not in server.seen[1]["headers"]   # a presigned URL never carries the key


def test_one_client_serves_one_event_loop_after_another():
    """A client kept between two asyncio.run calls (a CLI, a notebook) reconnects in the new loop."""
    from aiohttp.test_utils import TestServer

    async def hello(request):
        return web.json_response({"ok": True})

    async def once(client: AsyncClient) -> dict:
        app = web.Application()
        app.router.add_get("/health", hello)
        test_server = TestServer(app, host="127.0.0.1")
        await test_server.start_server()
        client._settings.urls["search"] = f"http://127.0.0.1:{test_server.port}"
        try:
            return await client.health("search")
        finally:
            await test_server.close()

    client = AsyncClient("ei_k", search_url="http://127.0.0.1:1", upload_url="http://127.0.0.1:1", max_retries=0)
    assert asyncio.run(once(client)) == {"ok": True}
    assert asyncio.run(once(client)) == {"ok": True}
    asyncio.run(client.aclose())
