"""The HTTP boundary (runtime/http.py) on a real aiohttp server: bodies, JSON checks, error shapes."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web
from edgeindex.errors import ValidationError
from edgeindex.json_codec import check_json_value
from edgeindex.runtime.http import (
    JSONErrorServer,
    Routes,
    error_middleware,
    read_body,
    read_json,
)

LIMIT = 1000


async def _serve(routes: Routes):
    """The routes behind the worker's middleware and JSON error server, on a free port: (runner, url)."""
    async def dispatch(request):
        return await routes.fetch(request, None, None)

    app = web.Application(middlewares=[error_middleware])
    app.router.add_route("*", "/{tail:.*}", dispatch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    runner.server.__class__ = JSONErrorServer
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"


@pytest.fixture
async def server():
    routes = Routes()

    @routes.put("/body")
    async def body(request, services, ctx):
        data = await read_body(request, max_bytes=LIMIT)
        return {"size": len(data)}

    @routes.post("/json")
    async def echo(request, services, ctx):
        return await read_json(request, max_bytes=LIMIT)

    @routes.get("/items/{item_id}")
    async def item(request, services, ctx, item_id):
        return {"item_id": item_id}

    @routes.get("/boom")
    async def boom(request, services, ctx):
        raise KeyError("a bug")

    runner, url = await _serve(routes)
    yield url
    await runner.cleanup()


async def _chunks(pieces):
    for piece in pieces:
        yield piece


async def test_a_chunked_body_is_read_whole_and_the_limit_counts_bytes_read(server):
    async with aiohttp.ClientSession() as session:
        async with session.put(server + "/body", data=_chunks([b"a" * 400, b"b" * 400])) as resp:
            assert (resp.status, await resp.json()) == (200, {"size": 800})
        async with session.put(server + "/body", data=_chunks([b"a" * 600, b"b" * 600])) as resp:
            body = await resp.json()
            assert (resp.status, body["error"], body["field"]) == (413, "payload_too_large", "body")


async def test_a_body_arriving_in_two_writes_is_not_cut(server):
    host, port = server.removeprefix("http://").split(":")
    payload = json.dumps({"words": "x" * 500}).encode()
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload[:7])
    await writer.drain()
    await asyncio.sleep(0.3)  # the slow client of the report: the rest arrives later
    writer.write(payload[7:])
    await writer.drain()
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {"words": "x" * 500}


async def test_path_parameters_are_decoded_after_matching(server):
    async with aiohttp.ClientSession() as session:
        async with session.get(server + "/items/reports%2F2025%2Fq3.pdf") as resp:
            assert await resp.json() == {"item_id": "reports/2025/q3.pdf"}


async def test_an_unexpected_exception_is_a_json_500_with_a_request_id(server):
    async with aiohttp.ClientSession() as session:
        async with session.get(server + "/boom") as resp:
            body = await resp.json()
            assert resp.status == 500 and body["error"] == "internal"
            assert body["request_id"] == resp.headers["X-Request-Id"]
            assert "a bug" not in json.dumps(body)  # the details are in the log, not in the answer


@pytest.mark.parametrize("value,field", [
    ({"a": {"b": "x\x00"}}, "a.b"),
    ({"list": ["ok", "\ud800"]}, "list.1"),
    ({"k\x00": 1}, "k\x00"),
])
def test_json_values_that_nothing_downstream_can_store_are_refused(value, field):
    with pytest.raises(ValidationError) as err:
        check_json_value(value)
    assert err.value.field == field


def test_nesting_is_bounded():
    value: object = 1
    for _ in range(40):
        value = {"x": value}
    with pytest.raises(ValidationError, match="nested"):
        check_json_value(value)


def test_the_rate_limiter_refuses_past_the_burst_and_refills_at_the_rate():
    from edgeindex.errors import RateLimited
    from edgeindex.tenancy import RateLimiter

    now = [100.0]
    limiter = RateLimiter(2.0, burst=3, clock=lambda: now[0])
    for _ in range(3):
        limiter.take("key_a")
    with pytest.raises(RateLimited) as err:
        limiter.take("key_a")
    assert err.value.status == 429 and 0 < err.value.retry_after <= 0.5
    limiter.take("key_b")  # another key has its own bucket
    now[0] += 0.5          # one token back at 2/s
    limiter.take("key_a")
    with pytest.raises(RateLimited):
        limiter.take("key_a")


async def test_a_429_carries_retry_after():
    from edgeindex.errors import RateLimited

    routes = Routes()

    @routes.get("/limited")
    async def limited(request, services, ctx):
        raise RateLimited("slow down", retry_after=2.2)

    runner, url = await _serve(routes)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/limited") as resp:
                assert (resp.status, resp.headers["Retry-After"]) == (429, "3")
                assert (await resp.json())["error"] == "rate_limited"
    finally:
        await runner.cleanup()


def test_upload_tokens_never_reach_the_log():
    from edgeindex.runtime.http import loggable_path

    assert loggable_path("/uploads/eyJhIjoxfQ.c2lnbmF0dXJl") == "/uploads/<token>"
    assert loggable_path("/entities/a/documents/b") == "/entities/a/documents/b"
