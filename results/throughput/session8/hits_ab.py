"""A/B rounds of cache hits on ONE stack: the search worker restarted per variant.

Iteration tool of the eighth session (hits), not a benchmark of record (load_search.py is): it
loads the chunks once, fills the cache with uncached searches once, then alternates variants
(each a set of environment variables for the search worker) and measures per round the exact
hit at --agents connections with wrk and the semantic hits (the paraphrases) with the SDK, so
two code paths are compared on the same data and the same machine minutes apart.

  flock /tmp/edgeindex-bench.lock .venv/bin/python results/throughput/session8/hits_ab.py \
      --variant base:EDGEINDEX_X=0 --variant new:EDGEINDEX_X=1 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("load_search", ROOT / "scripts" / "load_search.py")
ls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ls)


def _sched(pids: list[int]) -> tuple[int, int]:
    """Run-queue wait (ns, /proc/PID/schedstat) and involuntary context switches of the worker's threads."""
    wait = switches = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                wait += int((task / "schedstat").read_text().split()[1])
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("nonvoluntary_ctxt_switches"):
                        switches += int(line.split()[1])
            except (FileNotFoundError, ProcessLookupError):
                pass
    return wait, switches


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--wrk-seconds", type=float, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", action="append", required=True, help="name:VAR=value,VAR=value")
    parser.add_argument("--no-semantic", action="store_true")
    parser.add_argument("--warm-seconds", type=float, default=0, help="an unrecorded wrk run before each measured one")
    parser.add_argument("--profile", help="py-spy the worker during each wrk run into PROFILE-<variant>-<round>.raw")
    args = parser.parse_args()
    variants = []
    for text in args.variant:
        name, _, assignments = text.partition(":")
        variants.append((name, dict(a.split("=", 1) for a in assignments.split(",") if a)))

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    rows = []
    with tempfile.TemporaryDirectory(prefix="edgeindex-hitsab-") as state:
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state}
        for name in ("upload", "ingest", "search"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        environ["EDGEINDEX_SEARCH_PROCESSES"] = "1"
        environ["EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND"] = "0"
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        with open(Path(state) / "workers.log", "w") as log:
            stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                             environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})
            stack.start()
            try:
                asyncio.run(ls.load_chunks(stack.dsn, args.chunks))
                request = urllib.request.Request(
                    f"{stack.url('upload')}/admin/keys", method="POST",
                    data=json.dumps({"name": "load", "entity_ids": [ls.ENTITY]}).encode(),
                    headers={"Authorization": f"Bearer {stack.admin_key}", "Content-Type": "application/json"})
                with urllib.request.urlopen(request) as resp:
                    key = json.loads(resp.read())["key"]
                url = stack.url("search")
                pgdata = Path(state) / "pgdata"
                queries = [json.loads(line)["text"] for line in open(ls.DATA / "queries.jsonl", encoding="utf-8")]
                cached = None
                for round_ in range(args.rounds):
                    for name, env in variants:
                        stack.stop_worker("search")
                        stack.start_worker("search", extra_env=env)
                        stack.wait_healthy("search")
                        pids = ls.search_pids(url, 1, first=stack.processes["search"].pid)
                        ls.CPU_METER = ls.CPU(pids, pgdata)
                        profiler = None
                        if cached is None:   # the cache is filled once, by the first variant
                            asyncio.run(ls.run_phase(url, key, [{"query": q, "cache": False} for q in queries[:10]], 1, 30))
                            bodies = [{"query": queries[i % len(queries)], "k": 10,
                                       "alpha": round(0.7 - next(ls.UNIQUE) * 1e-6, 6)} for i in range(args.requests)]
                            result = asyncio.run(ls.run_phase(url, key, bodies, args.agents, 60))
                            ls.report("uncached", args.agents, result, summary=False)
                            cached = result["done"]
                            time.sleep(1.0)
                        # warm the new process: its exact front, its model
                        asyncio.run(ls.run_phase(url, key, cached[:20], 2, 30))
                        asyncio.run(ls.run_phase(url, key, [{**b, "query": b["query"] + " please"} for b in cached[:10]], 1, 30))
                        if args.warm_seconds:   # a fresh process's first seconds are not its steady state
                            ls.wrk_phase(url, key, cached[0], args.agents, args.warm_seconds)
                        first = len(ls.SUMMARY)
                        load_before = os.getloadavg()[0]
                        if args.profile:
                            profiler = ls.start_profile(f"{args.profile}-{name}-{round_}", args.agents)
                        sched = _sched(pids)
                        started = time.monotonic()
                        ls.wrk_phase(url, key, cached[0], args.agents, args.wrk_seconds)
                        wall = time.monotonic() - started
                        after = _sched(pids)
                        if profiler:
                            ls.stop_profile(profiler)
                        row = {"round": round_, "variant": name, "load": round(load_before, 2)}
                        if len(ls.SUMMARY) > first:
                            exact = ls.SUMMARY[-1]
                            row.update(exact_rps=exact["req_per_s"], exact_p50=exact["p50_ms"],
                                       exact_p99=exact["p99_ms"], exact_cpu=exact["cpu_ms_per_request"],
                                       # the worker's time ready but waiting for a core (ms per second of
                                       # the wrk run) and times it was preempted per second
                                       runqueue_ms_per_s=round((after[0] - sched[0]) / 1e6 / wall, 1),
                                       preempted_per_s=round((after[1] - sched[1]) / wall, 1))
                        if not args.no_semantic:
                            result = asyncio.run(ls.run_phase(
                                url, key, [{**b, "query": b["query"] + " please"} for b in cached],
                                args.agents, 30))
                            ls.report("semantic", args.agents, result, summary=False)
                            n = len(result["client"])
                            p50, p99 = np.percentile(result["client"], [50, 99])
                            row.update(sem_rps=round(n / result["wall"], 1), sem_p50=round(float(p50), 1),
                                       sem_p99=round(float(p99), 1), sem_kinds=result["kinds"],
                                       sem_cpu={k: round(v, 2) for k, v in result["cpu"].items()})
                        print("ROW " + json.dumps(row), flush=True)
                        rows.append(row)
            finally:
                stack.stop()
    for name, _ in variants:
        mine = [r for r in rows if r["variant"] == name]
        med = {k: float(np.median([r[k] for r in mine if k in r])) for k in
               ("exact_rps", "exact_p50", "exact_p99", "sem_rps", "sem_p50", "sem_p99") if any(k in r for r in mine)}
        print("MEDIAN " + json.dumps({"variant": name, "rounds": len(mine), **med}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
