"""The semantic-cache lookup alone: Postgres CPU and client CPU per lookup, three ways (semantic11).

One embedded Postgres (kept in FOLDER), the migrations of the ``edgeindex`` first on PYTHONPATH
(this branch: 0020 creates ``semantic_cache_nearest``), ``vector_index`` filled as load_search leaves it:
SCOPES namespaces of one vector each (each uncached search stores one pointer under its own scope),
plus one scope of 1,500 (the HNSW path). One pooled-like connection (custom plans, autocommit, psycopg's
auto-prepare), a lookup of a random small scope per call, as a semantic hit does. Per variant, rounds
alternating: backend CPU (/proc), this process's CPU, wall, per lookup.

  lookup_lab.py FOLDER [--lookups 2000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

import numpy as np
import psycopg
from psycopg.rows import dict_row

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SCOPES = 2000
MAIN_SQL = Path("/work/wt-semantic11-main/shared/sql/vectorize.sql")


def statement(name: str, path: Path) -> str:
    text = path.read_text()
    part = text.split(f"-- name: {name}\n", 1)[1]
    return part.split("\n-- name:", 1)[0]


def ticks(pid: int) -> int:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    from edgeindex.bindings.database import Database, _configure
    from edgeindex.bindings.vectorize import EXACT_MAX, UPSERT, PgVectorIndex
    from edgeindex.runtime.dev import EmbeddedPostgres
    import edgeindex
    pg = EmbeddedPostgres(folder / "pgdata")
    dsn = pg.start()
    try:
        db = Database(dsn, min_size=1, max_size=2)
        await db.open()
        await db.migrate(Path(edgeindex.__file__).resolve().parents[1] / "infra" / "migrations",
                         model_id=MODEL, dimension=384)
        await db.close()  # its connections were configured before the vector type existed
        db = Database(dsn, min_size=1, max_size=2)
        await db.open()
        index = PgVectorIndex(db, "query-cache", model_id=MODEL, dimension=384)
        rng = np.random.default_rng(3)
        vectors = rng.normal(size=(SCOPES + 1500, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        have = (await db.fetchone("SELECT count(*) AS n FROM vector_index"))["n"]
        if not have:
            async with db.transaction() as conn:
                async with conn.cursor() as cur:
                    await cur.executemany(UPSERT, [index.upsert_params(f"k{i}", vectors[i], namespace=f"ns{i}")
                                                   for i in range(SCOPES)])
                    await cur.executemany(UPSERT, [index.upsert_params(f"b{i}", vectors[SCOPES + i], namespace="big")
                                                   for i in range(1500)])
            await db.execute("VACUUM ANALYZE vector_index")
        main_sql = statement("query", MAIN_SQL)
        fn_sql = "SELECT id, score, metadata FROM semantic_cache_nearest(%(index)s, %(namespace)s, %(model)s, " \
                 "%(embedding)s, %(k)s, %(exact_max)s)"
        conn = await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row, autocommit=True)
        await _configure(conn)
        await conn.set_autocommit(True)
        backend = conn.info.backend_pid

        def params(i: int) -> dict:
            q = vectors[i % SCOPES] + rng.normal(scale=0.05, size=384).astype(np.float32)
            q /= np.linalg.norm(q)
            return {"index": "query-cache", "namespace": f"ns{i % SCOPES}", "model": MODEL, "embedding": q,
                    "k": 3, "exact_max": EXACT_MAX}

        async def plain(sql: str, p: dict) -> list:
            cur = await conn.execute(sql, p)
            return await cur.fetchall()

        async def pipelined(sql: str, p: dict) -> list:
            cur = conn.cursor()
            async with conn.pipeline():
                await conn.execute("SET plan_cache_mode = force_generic_plan")
                await cur.execute(sql, p, prepare=True)
                await conn.execute("SET plan_cache_mode = force_custom_plan")
            return await cur.fetchall()

        variants = {"main statement (custom)": lambda p: plain(main_sql, p),
                    "function (generic inside)": lambda p: plain(fn_sql, p),
                    "main statement, pipeline generic": lambda p: pipelined(main_sql, p)}
        # the same rows every way, and the large scope found through the function too
        for i in range(20):
            p = params(i)
            got = [[(r["id"], round(float(r["score"]), 5)) for r in await run(p)] for run in variants.values()]
            assert got[0] == got[1] == got[2] and got[0] and got[0][0][0] == f"k{i}", got
        pbig = {**params(0), "namespace": "big", "embedding": vectors[SCOPES + 700]}
        a, b = await plain(main_sql, pbig), await plain(fn_sql, pbig)
        assert [r["id"] for r in a] == [r["id"] for r in b] and a[0]["id"] == "b700", (a, b)
        results: dict[str, list] = {name: [] for name in variants}
        hz = os.sysconf("SC_CLK_TCK")
        for _ in range(args.rounds):
            for name, run in variants.items():
                ps = [params(i) for i in range(args.lookups)]
                for p in ps[:20]:
                    await run(p)
                b0, c0, w0 = ticks(backend), time.process_time(), time.perf_counter()
                for p in ps:
                    await run(p)
                b1, c1, w1 = ticks(backend), time.process_time(), time.perf_counter()
                n = len(ps)
                results[name].append(((b1 - b0) / hz * 1e6 / n, (c1 - c0) * 1e6 / n, (w1 - w0) * 1e6 / n))
        print(f"{args.lookups} lookups per round, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
        print(f"{'variant':<36} {'backend us/lookup':>28} {'client us':>22} {'wall us':>22}")
        for name, rows in results.items():
            cols = ["/".join(f"{r[j]:.0f}" for r in rows) + f" (med {statistics.median(r[j] for r in rows):.0f})"
                    for j in range(3)]
            print(f"{name:<36} {cols[0]:>28} {cols[1]:>22} {cols[2]:>22}")
        await conn.close()
        await db.close()
    finally:
        pg.stop()


asyncio.run(main())
