"""The search worker's own CPU per statement: the one-statement search (`engine.search`) and the
semantic lookup (`PgVectorIndex.query`), called one after another from one process, against
load_search.py's data (12,000 chunks of one tenant, random unit vectors). Postgres runs in other
processes, so this process's CPU time per call is the driver's and the engine's Python.

  .venv/bin/python results/throughput/session19/client_cpu_lab.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import lab_postgres
from lab_postgres import load_search


async def measure(label: str, call, n: int) -> None:
    cpu, wall = [], []
    for i in range(n):
        c, w = time.process_time(), time.perf_counter()
        await call(i)
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    print(f"{label:44} this process's CPU per call: mean {statistics.mean(cpu):.3f} ms; "
          f"wall median {statistics.median(wall):.3f} ms", flush=True)


async def run(args) -> None:
    from edgeindex.bindings.vectorize import PgVectorIndex
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request

    db = await lab_postgres.migrated_database(args.dsn)
    try:
        await load_search.load_chunks(args.dsn, args.chunks)
        queries, vectors = lab_postgres.queries()
        tuned = engine.tuned_connections()
        requests = [parse_request({"query": q, "k": 10, "alpha": 0.7}, max_k=100, max_query_chars=2000) for q in queries]
        index = PgVectorIndex(db, "semantic-cache", model_id=load_search.MODEL_ID, dimension=load_search.DIMENSION)

        async def search(i):
            await engine.search(db, requests[i % len(requests)], [load_search.ENTITY], vectors[i % len(vectors)],
                                tuned=tuned, limit=10)

        async def lookup(i):
            await index.query(vectors[i % len(vectors)], namespace=f"ns-{i}", top_k=3, min_score=0.9)

        async def trivial(i):
            await db.fetchone("SELECT 1 AS one")

        for _ in range(2):
            await measure("search statement (engine.search)", search, args.calls)
            await measure("semantic lookup (PgVectorIndex.query)", lookup, args.calls)
            await measure("SELECT 1 (db.fetchone)", trivial, args.calls)
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with lab_postgres.embedded_postgres("edgeindex-client-cpu-") as args.dsn:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
