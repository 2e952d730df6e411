"""The SDK's own cost per select, in process, against a canned answer (no model, no database).

    nice -n 15 .venv/bin/python results/selection/session8/latency/sdk_micro.py [--n 2000] [--profile FILE]

A subprocess serves POST /tools/select with a fixed ~4 kB JSON answer shaped like the real one (five
full BFCL definitions). Clients alternate call by call: the SDK (AsyncClient.select_tools), bare
httpx.AsyncClient, bare aiohttp. Prints p50 / p99 / mean per client in ms.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time
from pathlib import Path

import numpy as np


def answer() -> bytes:
    tools = [json.loads(line) for line in Path("../shared/data/tools-bfcl/tools.jsonl").read_text().splitlines()[:5]]
    body = {"tools": [{**t, "score": 3.21, "reason": "matched"} for t in tools],
            "tokens": {"selected": 612, "registry": 91000, "reduction": 0.9933, "tokenizer": "cl100k_base"},
            "fallback": False, "confident": True, "model_id": "all-MiniLM-L6-v2",
            "catalogue": {"state": "cached", "tools": 1000, "version": 7},
            "timings": {"catalogue_ms": 0.6, "embed_ms": 6.8, "score_ms": 1.1}, "took_ms": 8.9}
    return json.dumps(body).encode()


def serve(port: int, payload: bytes) -> None:
    from aiohttp import web

    async def select(request):
        await request.read()
        return web.Response(body=payload, content_type="application/json")

    app = web.Application()
    app.router.add_post("/tools/select", select)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def run(port: int, n: int, profile: str | None) -> None:
    import aiohttp
    import httpx
    from edgeindex_client import AsyncClient

    url = f"http://127.0.0.1:{port}"
    sdk = AsyncClient("ei_x", upload_url=url, search_url=url, max_retries=0)
    hx = httpx.AsyncClient(headers={"Authorization": "Bearer ei_x"})
    ah = aiohttp.ClientSession(headers={"Authorization": "Bearer ei_x"},
                               connector=aiohttp.TCPConnector(limit=1, keepalive_timeout=60))
    body = {"query": "what is the weather in Paris tomorrow", "entity_ids": ["bench"], "k": 5}

    async def c_sdk():
        await sdk.select_tools(body["query"], entity_ids=body["entity_ids"], k=5)

    async def c_httpx():
        r = await hx.post(f"{url}/tools/select", json=body)
        r.json()

    async def c_aiohttp():
        async with ah.post(f"{url}/tools/select", json=body) as r:
            await r.read()

    clients = {"sdk": c_sdk, "httpx": c_httpx, "aiohttp": c_aiohttp}
    for f in clients.values():
        for _ in range(50):
            await f()
    times: dict[str, list[float]] = {k: [] for k in clients}
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
    for _ in range(n):
        for name, f in clients.items():
            if prof and name == "sdk":
                prof.enable()
            mark = time.perf_counter()
            await f()
            times[name].append((time.perf_counter() - mark) * 1000)
            if prof and name == "sdk":
                prof.disable()
    if prof:
        prof.dump_stats(profile)
    for name, values in times.items():
        print(f"{name:8s} p50 {np.percentile(values, 50):.3f}  p99 {np.percentile(values, 99):.3f}  "
              f"mean {np.mean(values):.3f} ms")
    await sdk.aclose()
    await hx.aclose()
    await ah.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--profile")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = multiprocessing.Process(target=serve, args=(port, answer()), daemon=True)
    server.start()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        asyncio.run(run(port, args.n, args.profile))
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
