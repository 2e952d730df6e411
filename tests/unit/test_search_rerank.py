"""The HTTP reranker against a real local HTTP server speaking both wire formats."""

from __future__ import annotations

import pytest
from aiohttp import web
from edgeindex.bindings.rerank import HTTPReranker
from edgeindex.errors import BindingError


@pytest.fixture
async def server():
    seen: list[dict] = []

    async def tei(request):  # TEI: [{index, score}], highest first
        body = await request.json()
        seen.append(body)
        scored = [{"index": i, "score": float(t.count("x"))} for i, t in enumerate(body["texts"])]
        return web.json_response(sorted(scored, key=lambda s: -s["score"]))

    async def cohere(request):  # Cohere-style: {results: [{index, relevance_score}]}
        body = await request.json()
        seen.append(body)
        return web.json_response({"results": [{"index": i, "relevance_score": len(d)}
                                              for i, d in enumerate(body["documents"])]})

    async def broken(request):
        return web.json_response({"error": "model not loaded"}, status=503)

    async def partial(request):
        return web.json_response([{"index": 0, "score": 1.0}])

    app = web.Application()
    app.router.add_post("/rerank", tei)
    app.router.add_post("/v1/rerank", cohere)
    app.router.add_post("/broken", broken)
    app.router.add_post("/partial", partial)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_tei_format(server):
    base, seen = server
    scores = await HTTPReranker(f"{base}/rerank").rerank("q", ["a", "xx", "x"])
    assert scores == [0.0, 2.0, 1.0]  # back in the order given, whatever order the server answered
    assert seen[-1] == {"query": "q", "texts": ["a", "xx", "x"]}


async def test_cohere_format_when_a_model_is_named(server):
    base, seen = server
    scores = await HTTPReranker(f"{base}/v1/rerank", model="bge-reranker").rerank("q", ["aaa", "a"])
    assert scores == [3.0, 1.0]
    assert seen[-1] == {"model": "bge-reranker", "query": "q", "documents": ["aaa", "a"]}


async def test_failures_are_binding_errors(server):
    base, _ = server
    with pytest.raises(BindingError, match="503"):
        await HTTPReranker(f"{base}/broken").rerank("q", ["a"])
    with pytest.raises(BindingError, match="every text"):
        await HTTPReranker(f"{base}/partial").rerank("q", ["a", "b"])
    with pytest.raises(BindingError, match="failed"):
        await HTTPReranker("http://127.0.0.1:9/rerank", timeout=2).rerank("q", ["a"])


async def test_nothing_to_rerank():
    assert await HTTPReranker("http://127.0.0.1:9/rerank").rerank("q", []) == []
