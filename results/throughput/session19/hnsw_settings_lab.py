"""What the chunks' HNSW walk costs in Postgres under session settings that change no result of an
unfiltered search: `hnsw.iterative_scan` off against relaxed_order (the search connections' setting),
on load_search.py's data (12,000 chunks of one tenant, random unit vectors).

  .venv/bin/python results/throughput/session19/hnsw_settings_lab.py [--queries 300] [--rounds 4]

Times the vector half alone (the statement's `vec` walk: ORDER BY the halfvec distance, LIMIT 40) and
the whole one-statement search (EXPLAIN ANALYZE's execution time), alternating the settings per round,
and checks both settings return the same chunk ids.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import lab_postgres
from lab_postgres import load_search

WALK = ("SELECT id FROM chunks WHERE entity_id = ANY(%(e)s::text[]) "
        "ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT 40")


async def run(args) -> None:
    import numpy as np
    import psycopg
    from edgeindex.evaluation.loader import random_unit_vectors

    await (await lab_postgres.migrated_database(args.dsn, max_size=1)).close()
    await load_search.load_chunks(args.dsn, args.chunks)
    vectors = random_unit_vectors(np.random.default_rng(7), args.queries, load_search.DIMENSION)
    texts = ["[" + ",".join(f"{x:.6f}" for x in v) + "]" for v in vectors]
    async with await psycopg.AsyncConnection.connect(args.dsn, autocommit=True) as conn:
        await conn.execute("SET hnsw.ef_search = 40")
        ids = {}
        times = {"off": [], "relaxed_order": []}
        for round_ in range(args.rounds):
            for setting in (("off", "relaxed_order") if round_ % 2 == 0 else ("relaxed_order", "off")):
                await conn.execute(f"SET hnsw.iterative_scan = {setting}")
                wall = time.perf_counter()
                for i, q in enumerate(texts):
                    rows = await (await conn.execute(WALK, {"e": [load_search.ENTITY], "q": q}, prepare=True)).fetchall()
                    ids.setdefault(setting, {})[i] = [r[0] for r in rows]
                times[setting].append((time.perf_counter() - wall) * 1000 / len(texts))
        same = sum(ids["off"][i] == ids["relaxed_order"][i] for i in range(len(texts)))
        for setting, values in times.items():
            print(f"iterative_scan = {setting:14} walk, wall ms per query over {args.queries}: "
                  f"rounds {', '.join(f'{v:.3f}' for v in values)}; median {statistics.median(values):.3f}")
        print(f"same 40 ids under both settings: {same} of {len(texts)} queries")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with lab_postgres.embedded_postgres("edgeindex-hnsw-lab-") as args.dsn:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
