"""What the HNSW walk and the whole search statement cost on load_search.py's chunks with random unit
vectors (what load_search loads) against the same chunks with their real embeddings, queried with the
real query embeddings of load_search's 50 MS MARCO queries in both.

  .venv/bin/python results/throughput/session21/real_vectors_lab.py VECTORS.npy QUERIES.npy [--rounds 6]

VECTORS.npy: the real model's vectors of the 12,000 synthetic chunk texts in loader.synthetic_documents'
order; QUERIES.npy: the query encoder's vectors of the 50 queries (made by embed_chunks.py). Two
embedded Postgres instances, one tenant each, so neither walk filters the other's vectors; queries
alternate between them, and the order of the two flips every round, so the VM's drift cancels.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session19"))

import lab_postgres  # noqa: E402
from lab_postgres import load_search  # noqa: E402

WALK = ("SELECT id FROM chunks WHERE entity_id = ANY(%(e)s::text[]) "
        "ORDER BY embedding::halfvec(384) <=> %(q)s::vector::halfvec(384) LIMIT 40")


async def load(dsn: str, chunks: int, vectors) -> None:
    """load_search's chunks into the database at ``dsn``: with ``vectors``, or random unit vectors (None)."""
    await (await lab_postgres.migrated_database(dsn)).close()
    await load_search.load_chunks(dsn, chunks, vectors)


async def measure(dsns: dict[str, str], queries: list[str], qvectors) -> None:
    import numpy as np
    import psycopg
    from edgeindex.evaluation import explain as ex
    from edgeindex.search.request import parse_request

    dbs = {name: await lab_postgres.migrated_database(dsn) for name, dsn in dsns.items()}
    conns = {name: await psycopg.AsyncConnection.connect(dsn, autocommit=True) for name, dsn in dsns.items()}
    literals = ["[" + ",".join(f"{x:.7f}" for x in v) + "]" for v in qvectors]
    walk = {name: [] for name in dsns}
    statement = {name: [] for name in dsns}
    try:
        for conn in conns.values():
            await conn.execute("SET hnsw.ef_search = 40")
            await conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for round_ in range(ARGS.rounds):
            order = list(dsns) if round_ % 2 == 0 else list(reversed(dsns))
            per = {name: [] for name in dsns}
            execs = {name: [] for name in dsns}
            for i, (query, vector) in enumerate(zip(queries, qvectors)):
                for name in order:
                    started = time.perf_counter()
                    await (await conns[name].execute(WALK, {"e": [load_search.ENTITY], "q": literals[i]},
                                                     prepare=True)).fetchall()
                    per[name].append((time.perf_counter() - started) * 1000)
                    request = parse_request({"query": query, "k": 10, "alpha": 0.7 - (round_ * 100 + i) * 1e-6},
                                            max_k=100, max_query_chars=2000)
                    plan = await ex.explain_one(dbs[name], request, [load_search.ENTITY], np.asarray(vector))
                    execs[name].extend(float(line.split(":")[1].split()[0]) for line in plan
                                       if line.strip().startswith("Execution Time"))
            for name in dsns:
                walk[name].append(statistics.median(per[name]))
                statement[name].append(statistics.median(execs[name]))
        for name in dsns:
            print(f"{name:7} walk wall ms (median per round): {', '.join(f'{v:.3f}' for v in walk[name])}; "
                  f"median {statistics.median(walk[name]):.3f}")
            print(f"{name:7} search statement execution ms (EXPLAIN ANALYZE, median per round): "
                  f"{', '.join(f'{v:.3f}' for v in statement[name])}; median {statistics.median(statement[name]):.3f}")
        ratio_walk = statistics.median(w / r for w, r in zip(walk["real"], walk["random"]))
        ratio_stmt = statistics.median(w / r for w, r in zip(statement["real"], statement["random"]))
        print(f"real / random: walk {ratio_walk:.3f}, statement {ratio_stmt:.3f} (median of per-round ratios)")
    finally:
        for conn in conns.values():
            await conn.close()
        for db in dbs.values():
            await db.close()


def main() -> int:
    global ARGS
    import json

    import numpy as np

    parser = argparse.ArgumentParser()
    parser.add_argument("vectors")
    parser.add_argument("queries")
    parser.add_argument("--rounds", type=int, default=6)
    ARGS = parser.parse_args()
    vectors = np.load(ARGS.vectors)
    qvectors = np.load(ARGS.queries)
    queries = [json.loads(line)["text"] for line in open(load_search.DATA / "queries.jsonl", encoding="utf-8")]
    with lab_postgres.embedded_postgres("edgeindex-real-lab-a-") as random_dsn, \
            lab_postgres.embedded_postgres("edgeindex-real-lab-b-") as real_dsn:
        asyncio.run(load(random_dsn, len(vectors), None))
        asyncio.run(load(real_dsn, len(vectors), vectors))
        asyncio.run(measure({"random": random_dsn, "real": real_dsn}, queries, qvectors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
