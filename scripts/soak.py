"""Soak: N agents for M minutes mixing searches, uploads, updates and deletes against one stack.

Starts a fresh local stack (embedded Postgres, moto, the three workers) in a temp folder, makes
one tenant and key per agent, then every agent loops until the time is up, choosing per step:
search (60%, a third of them repeats, so caches are hit), upload a new small document (15%),
update one of its documents (15%), delete one (10%). Every answer is checked: a 5xx, a JSON
error body without a request id, or a 4xx the request did not ask for is an error, counted by
kind (expected: none).

Prints, per minute and route, the request count and p50/p99 in ms; then each worker process's
resident memory at start (after warm-up) and at the end — it should stay flat — and its timeline
(every --sample-seconds). EDGEINDEX_MEMTRACE_FILE=/tmp/mt-{pid}.jsonl also makes the ingest worker
write tracemalloc and malloc figures (edgeindex.runtime.memtrace).

  .venv/bin/python scripts/soak.py                       # 8 agents, 10 minutes
  .venv/bin/python scripts/soak.py --agents 4 --minutes 2

Ends with one JSON line: {"agents", "minutes", "requests", "errors", "errors_by_kind",
"p50_ms"/"p99_ms" per route, "rss_mb": {worker: [start, end]}, "rss_timeline_mb": {worker: [[s, MB]]}}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import psutil
from edgeindex_client import APIConnectionError, APIError, AsyncClient

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["tide tables", "bridge inspection", "orchard pruning", "glacier retreat", "rail timetable",
          "vaccine storage", "solar inverter", "library archive", "river flooding", "wind turbine"]


def text_for(rng: random.Random, agent: int, n: int) -> str:
    topic = rng.choice(TOPICS)
    return (f"Report {n} of agent {agent} on {topic}. " +
            " ".join(f"The {topic} note {i} records measurement {rng.randrange(1000)} and a follow-up."
                     for i in range(rng.randint(3, 12))))


class Recorder:
    def __init__(self, started: float) -> None:
        self.started = started
        self.latency: dict[tuple[int, str], list[float]] = defaultdict(list)
        self.errors: Counter = Counter()
        self.requests = 0

    def record(self, route: str, ms: float) -> None:
        self.requests += 1
        self.latency[(int((time.monotonic() - self.started) // 60), route)].append(ms)


async def call(rec: Recorder, route: str, request) -> tuple[int, object]:
    """Time one SDK call and check its answer: (status, result); an error answer is checked too."""
    mark = time.perf_counter()
    try:
        result = await request
    except APIError as exc:  # the SDK keeps the status and the parsed JSON body of the error
        rec.record(route, (time.perf_counter() - mark) * 1000)
        body = exc.body if isinstance(exc.body, dict) else None
        if body is None:
            rec.errors[f"{route}: non-JSON {exc.status}"] += 1
        if exc.status >= 500:
            rec.errors[f"{route}: {exc.status} {exc.code}"] += 1
        else:  # every route here expects a 2xx
            rec.errors[f"{route}: unexpected {exc.status} {exc.code}"] += 1
        if body is not None and not body.get("request_id"):
            rec.errors[f"{route}: error without request id"] += 1
        return exc.status, None
    except APIConnectionError as exc:
        rec.errors[f"{route}: {type(exc).__name__}"] += 1
        return 0, None
    rec.record(route, (time.perf_counter() - mark) * 1000)
    return 200, result


async def agent(n: int, upload: str, search: str, entity: str, key: str, deadline: float, rec: Recorder,
                seed: int) -> None:
    rng = random.Random(seed * 100 + n)
    docs: list[str] = []
    counter = 0
    past_queries: list[str] = []
    # The project's SDK, as a user would run it; no retries, so every refusal and failure is counted.
    async with AsyncClient(key, upload_url=upload, search_url=search, timeout=60, max_retries=0) as client:
        while time.monotonic() < deadline:
            op = rng.random()
            if op < 0.6 or not docs and op < 0.85:
                if past_queries and rng.random() < 0.33:
                    query = rng.choice(past_queries)
                else:
                    query = f"{rng.choice(TOPICS)} measurement {rng.randrange(50)}"
                    past_queries = (past_queries + [query])[-20:]
                await call(rec, "search", client.search(query, k=5))
            elif op < 0.75 or not docs:
                counter += 1
                document_id = f"a{n}/doc {counter}.txt"
                status, _ = await call(rec, "upload", client.upload_text(entity, document_id,
                                                                        text_for(rng, n, counter)))
                if status == 200:
                    docs.append(document_id)
            elif op < 0.9:
                document_id = rng.choice(docs)
                await call(rec, "update", client.upload_text(entity, document_id, text_for(rng, n, counter)))
            else:
                document_id = docs.pop(rng.randrange(len(docs)))
                await call(rec, "delete", client.delete_document(entity, document_id))


def rss_mb(pid: int) -> float:
    try:
        process = psutil.Process(pid)
        return round(sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 2**20, 1)
    except psutil.NoSuchProcess:
        return float("nan")


async def setup(upload: str, admin_key: str, agents: int) -> list[tuple[str, str]]:
    tenants = []
    run = f"soak{int(time.time())}"
    async with AsyncClient(admin_key, upload_url=upload, max_retries=0) as admin:
        for n in range(agents):
            entity = f"{run}-{n}"
            await admin.create_entity(entity, "user")
            tenants.append((entity, (await admin.create_key(entity, [entity])).key))
    return tenants


def report(rec: Recorder, rss: dict[str, list[float]], timeline: dict[str, list[tuple[int, float]]],
           args) -> dict:
    routes = sorted({route for _, route in rec.latency})
    minutes = sorted({m for m, _ in rec.latency})
    print(f"\n{'minute':>6} " + " ".join(f"{r:>26}" for r in routes))
    for m in minutes:
        cells = []
        for r in routes:
            values = rec.latency.get((m, r), [])
            cells.append(f"{len(values):5d} p50 {np.percentile(values, 50):6.1f} p99 {np.percentile(values, 99):6.1f}"
                         if values else f"{'-':>26}")
        print(f"{m:>6} " + " ".join(f"{c:>26}" for c in cells))
    overall = {r: [v for (m, route), vs in rec.latency.items() if route == r for v in vs] for r in routes}
    print("\nerrors by kind:", dict(rec.errors) or "none")
    print("worker memory (MB, start → end):", {k: f"{v[0]} → {v[1]}" for k, v in rss.items()})
    print("worker memory over time (s: MB):")
    for name, samples in timeline.items():
        print(f"  {name:>8} " + " ".join(f"{t}:{mb:.0f}" for t, mb in samples))
    return {"agents": args.agents, "minutes": args.minutes, "requests": rec.requests,
            "errors": sum(rec.errors.values()), "errors_by_kind": dict(rec.errors),
            "p50_ms": {r: round(float(np.percentile(v, 50)), 1) for r, v in overall.items()},
            "p99_ms": {r: round(float(np.percentile(v, 99)), 1) for r, v in overall.items()},
            "rss_mb": rss, "rss_timeline_mb": timeline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--warmup-seconds", type=float, default=30.0, help="memory is read after this")
    parser.add_argument("--sample-seconds", type=float, default=30.0,
                        help="memory of every process is also read this often, for the timeline")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.helpers import running_stack

    with tempfile.TemporaryDirectory() as state, running_stack(Path(state)) as stack:
        tenants = asyncio.run(setup(stack.url("upload"), stack.admin_key, args.agents))
        rec = Recorder(time.monotonic())
        deadline = time.monotonic() + args.minutes * 60
        rss: dict[str, list[float]] = {}
        timeline: dict[str, list[tuple[int, float]]] = {}

        async def run() -> None:
            async def sample_start():
                await asyncio.sleep(min(args.warmup_seconds, args.minutes * 30))
                for name, process in stack.processes.items():
                    rss[name] = [rss_mb(process.pid)]

            async def sample_timeline():
                # every --sample-seconds until the end: growth that levels off is warm-up, a steady
                # slope to the end is a leak (start and end alone cannot tell them apart)
                while time.monotonic() < deadline:
                    t = round(time.monotonic() - rec.started)
                    for name, process in stack.processes.items():
                        timeline.setdefault(name, []).append((t, rss_mb(process.pid)))
                    await asyncio.sleep(min(args.sample_seconds, max(0.0, deadline - time.monotonic())))

            await asyncio.gather(sample_start(), sample_timeline(), *(
                agent(n, stack.url("upload"), stack.url("search"), entity, key, deadline, rec, args.seed)
                for n, (entity, key) in enumerate(tenants)))

        asyncio.run(run())
        for name, process in stack.processes.items():
            rss.setdefault(name, [float("nan")]).append(rss_mb(process.pid))
            timeline.setdefault(name, []).append((round(time.monotonic() - rec.started), rss[name][-1]))
        result = report(rec, rss, timeline, args)
    print(json.dumps(result))
    sys.exit(1 if result["errors"] else 0)


if __name__ == "__main__":
    main()
