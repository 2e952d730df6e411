#!/usr/bin/env python
"""Latency of POST /tools/select over HTTP with 1,000 tools registered.

    .venv/bin/python scripts/bench_select.py [--tools DIR] [--count 1000] [--queries 500] [--feedback 20]
        [--upload-url URL --search-url URL --admin-key KEY]

Without the URLs a fresh stack is started on a temporary state folder (embedded Postgres,
moto, three worker processes) and removed afterwards. The catalogue is ``DIR/tools.jsonl``
when given (padded with generated tools up to ``--count``), else ``--count`` generated
tools; queries are ``DIR/queries.jsonl`` or generated requests. Each query is sent once to
warm up, then timed one at a time (client wall time, k=5) through the project's SDK
(``edgeindex_client.AsyncClient``) and, alternating query by query, through a bare aiohttp
keep-alive session, so the SDK's overhead is a same-run ratio.
Figures are printed, not asserted (goal: p99 < 20 ms). The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

import aiohttp
import numpy as np
from edgeindex_client import AsyncClient

VERBS = ["get", "list", "create", "update", "delete", "search", "compute", "convert", "send", "schedule",
         "fetch", "estimate", "validate", "translate", "summarize", "book", "cancel", "track", "export", "import"]
OBJECTS = ["invoice", "order", "weather", "flight", "hotel", "stock_price", "recipe", "calendar_event", "email",
           "ticket", "shipment", "payment", "refund", "customer", "employee", "playlist", "route", "document",
           "image", "repository", "pull_request", "sensor_reading", "exchange_rate", "movie", "restaurant",
           "prescription", "course", "vehicle", "subscription", "contract", "warehouse", "tax_return",
           "parking_spot", "energy_usage", "loan", "insurance_claim", "podcast", "dataset", "invoice_line",
           "meeting_room", "password", "backup", "domain", "dns_record", "certificate", "lead", "campaign",
           "survey", "timesheet", "expense"]


def generated_tools(count: int, rng: random.Random) -> list[dict]:
    tools = []
    for verb in VERBS:
        for obj in OBJECTS:
            words = obj.replace("_", " ")
            tools.append({"name": f"{verb}_{obj}", "description": f"{verb.capitalize()} a {words} for the user.",
                          "parameters": {"type": "object", "properties": {
                              f"{obj}_id": {"type": "string", "description": f"id of the {words}"},
                              "limit": {"type": "integer"}}}})
    rng.shuffle(tools)
    return tools[:count]


def generated_queries(tools: list[dict], count: int, rng: random.Random) -> list[str]:
    picks = rng.sample(tools, min(count, len(tools)))
    return [f"please {t['name'].split('_', 1)[0]} the {t['name'].split('_', 1)[1].replace('_', ' ')} "
            "I mentioned yesterday" for t in picks]


def _percentiles(values: list[float]) -> dict:
    return {"p50_ms": round(float(np.percentile(values, 50)), 2), "p99_ms": round(float(np.percentile(values, 99)), 2)}


async def feedback_cost(sdk: AsyncClient, entity: str, tools: list[dict], queries: list[str], rounds: int) -> dict:
    """What a feedback costs the next select, against what a registry change costs it (same run).

    Each round reports the first selected tool as used, then selects again: that select refreshes the
    catalogue's learned layer (``catalogue.state`` "refreshed"). Then one tool's description changes,
    which must rebuild the catalogue ("built"), and the next select pays for that.
    """
    feedback_ms, refreshed_ms, states = [], [], []
    for query in queries[:rounds]:
        first = (await sdk.select_tools(query, entity_ids=[entity], k=5)).model_dump()
        mark = time.perf_counter()
        reply = await sdk.request("POST", "/tools/feedback", service="search", json={
            "query": query, "entity_ids": [entity], "used": [first["tools"][0]["name"]]})
        feedback_ms.append((time.perf_counter() - mark) * 1000)
        assert reply.status == 200, reply.body
        body = (await sdk.select_tools(query, entity_ids=[entity], k=5)).model_dump()
        states.append(body["catalogue"]["state"])
        refreshed_ms.append(body["timings"]["catalogue_ms"])
    built_ms = []
    for round_ in range(3):
        changed = {**tools[round_], "description": f"{tools[round_].get('description', '')} (rev {time.time()})"}
        reply = await sdk.request("POST", f"/entities/{entity}/tools", service="search", json={"tools": [changed]})
        assert reply.status == 200, reply.body
        body = (await sdk.select_tools(queries[0], entity_ids=[entity], k=5)).model_dump()
        states.append(body["catalogue"]["state"])
        built_ms.append(body["timings"]["catalogue_ms"])
    return {"rounds": rounds, "states": {s: states.count(s) for s in dict.fromkeys(states)},
            "feedback_p50_ms": round(float(np.percentile(feedback_ms, 50)), 2),
            "catalogue_after_feedback_p50_ms": round(float(np.percentile(refreshed_ms, 50)), 2),
            "catalogue_after_feedback_max_ms": round(float(max(refreshed_ms)), 2),
            "catalogue_after_registry_change_p50_ms": round(float(np.percentile(built_ms, 50)), 2)}


async def bench(search_url: str, upload_url: str, admin_key: str, tools: list[dict], queries: list[str],
                *, compare_raw: bool = True, feedback_rounds: int = 0, per_query: list | None = None) -> dict:
    """Timed through the project's SDK (edgeindex_client.AsyncClient, no retries). With ``compare_raw`` the
    same queries also go through a bare aiohttp session, alternating query by query, so the SDK's own
    cost shows as a ratio measured under the same load."""
    entity = f"bench-select-{os.getpid()}-{int(time.time())}"
    async with AsyncClient(admin_key, upload_url=upload_url, search_url=search_url, max_retries=0) as admin:
        await admin.create_entity(entity, "user", entity)
        key = (await admin.create_key(entity, [entity])).key
    sdk = AsyncClient(key, upload_url=upload_url, search_url=search_url, max_retries=0, timeout=600.0)
    raw = aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"},
                                connector=aiohttp.TCPConnector(limit=1, keepalive_timeout=60),
                                timeout=aiohttp.ClientTimeout(total=600))
    try:
        started = time.perf_counter()
        for start in range(0, len(tools), 200):
            reply = await sdk.request("POST", f"/entities/{entity}/tools", service="search",
                                      json={"tools": tools[start:start + 200]})
            assert reply.status == 200, reply.body
        register_s = time.perf_counter() - started
        print(f"registered {len(tools)} tools in {register_s:.1f} s", flush=True)
        server, latencies, raw_latencies, stages = [], [], [], {}
        for timed in (False, True):
            for query in queries:
                mark = time.perf_counter()
                body = (await sdk.select_tools(query, entity_ids=[entity], k=5)).model_dump()
                elapsed = (time.perf_counter() - mark) * 1000
                if compare_raw:
                    mark = time.perf_counter()
                    async with raw.post(f"{search_url}/tools/select",
                                        json={"query": query, "entity_ids": [entity], "k": 5}) as r:
                        await r.read()
                        assert r.status == 200, await r.text()
                    raw_elapsed = (time.perf_counter() - mark) * 1000
                if timed:
                    latencies.append(elapsed)
                    if compare_raw:
                        raw_latencies.append(raw_elapsed)
                    server.append(body["took_ms"])
                    for stage, ms in (body.get("timings") or {}).items():
                        stages.setdefault(stage, []).append(ms)
                    if per_query is not None:
                        per_query.append({"query": query, "sdk_ms": round(elapsed, 2),
                                          **({"raw_ms": round(raw_elapsed, 2)} if compare_raw else {}),
                                          "took_ms": body["took_ms"], **(body.get("timings") or {})})
        feedback = await feedback_cost(sdk, entity, tools, queries, feedback_rounds) if feedback_rounds else None
    finally:
        await sdk.aclose()
        await raw.close()
    sdk_p = _percentiles(latencies)
    return {"tools": len(tools), "queries": len(queries), "register_s": round(register_s, 1),
            "client": "edgeindex_client.AsyncClient", **sdk_p,
            **({"raw_aiohttp": _percentiles(raw_latencies)} if compare_raw else {}),
            "server_p50_ms": round(float(np.percentile(server, 50)), 2),
            "server_p99_ms": round(float(np.percentile(server, 99)), 2),
            "stages_p50_ms": {k: round(float(np.percentile(v, 50)), 2) for k, v in stages.items()},
            "stages_p99_ms": {k: round(float(np.percentile(v, 99)), 2) for k, v in stages.items()},
            **({"feedback": feedback} if feedback else {}),
            "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=Path, help="folder with tools.jsonl (and queries.jsonl)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--upload-url")
    parser.add_argument("--search-url")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY", ""))
    parser.add_argument("--no-raw", action="store_true", help="skip the bare-aiohttp comparison")
    parser.add_argument("--per-query", type=Path, metavar="FILE",
                        help="also write each timed query's latencies and server timings to FILE (JSON lines): "
                             "which requests make the tail")
    parser.add_argument("--feedback", type=int, default=20, metavar="N",
                        help="after the timed selects, N feedback + select rounds (0: none): what a feedback "
                             "costs the next select against a registry change")
    args = parser.parse_args()
    rng = random.Random(7)
    tools = []
    queries: list[str] = []
    if args.tools:
        tools = [json.loads(line) for line in (args.tools / "tools.jsonl").read_text().splitlines() if line.strip()]
        path = args.tools / "queries.jsonl"
        if path.exists():
            queries = [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]
    names = {t["name"] for t in tools}
    tools += [t for t in generated_tools(len(VERBS) * len(OBJECTS), rng) if t["name"] not in names][:max(0, args.count - len(tools))]
    tools = tools[:args.count]
    queries = (queries or generated_queries(tools, args.queries, rng))[:args.queries]
    per_query: list | None = [] if args.per_query else None
    if args.search_url:
        result = asyncio.run(bench(args.search_url.rstrip("/"), args.upload_url.rstrip("/"), args.admin_key, tools, queries,
                                   compare_raw=not args.no_raw, feedback_rounds=args.feedback, per_query=per_query))
    else:
        from edgeindex import config as config_module
        from edgeindex.evaluation.stack import fresh_stack

        with fresh_stack(config_module.find_config(), progress=print) as endpoints:
            result = asyncio.run(bench(endpoints.search_url, endpoints.upload_url, endpoints.admin_key, tools, queries,
                                       compare_raw=not args.no_raw, feedback_rounds=args.feedback, per_query=per_query))
    print(f"select over HTTP with {result['tools']} tools: p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms "
          f"through the SDK (bare aiohttp in the same run: {result.get('raw_aiohttp')}; server took_ms p50 {result['server_p50_ms']}, p99 {result['server_p99_ms']}; "
          f"load average {result['load_average']:.1f} on {result['cpus']} cpus)")
    if "feedback" in result:
        f = result["feedback"]
        print(f"feedback: {f['feedback_p50_ms']} ms p50; the next select's catalogue step {f['catalogue_after_feedback_p50_ms']} ms "
              f"p50 (max {f['catalogue_after_feedback_max_ms']}) against {f['catalogue_after_registry_change_p50_ms']} ms after a "
              f"registry change (states {f['states']})")
    if args.per_query:
        args.per_query.write_text("".join(json.dumps(row) + "\n" for row in per_query))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
