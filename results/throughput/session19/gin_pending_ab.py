"""Do searches slow down while documents keep arriving, and does migration 0022 (GIN `fastupdate` off)
stop it? Paired, so that the VM's changing speed cancels: two tenants with the same 12,000 chunks
(load_search.py's texts and random unit vectors), in two partitions, one of whose GIN indexes
(full text, vocabulary trigrams) are set back to Postgres's default (`fastupdate` on, a 4 MB pending
list: main before 0022) while the other's keep 0022's setting. Autovacuum off. More chunks go into
both, in steps; after each step, and after a final VACUUM, every query (load_search.py's 50, or the
first --queries) is searched in both tenants one right after the other (the order alternating), and
the medians and the median of the paired ratios are printed.

  .venv/bin/python results/throughput/session19/gin_pending_ab.py [--added 1500,2500] [--queries 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import lab_postgres
from lab_postgres import load_search

TENANTS = {"pending": "gin-ab-a", "direct": "gin-ab-b"}


async def partition(db, entity: str) -> str:
    row = await db.fetchone("SELECT tableoid::regclass::text AS p FROM chunks WHERE entity_id = %(e)s LIMIT 1", {"e": entity})
    return row["p"]


async def pending(db) -> str:
    rows = await db.fetch(
        "SELECT c.relname, (pgstatginindex(c.oid)).pending_tuples AS tuples FROM pg_class c "
        "JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'gin' AND c.relkind = 'i' "
        "AND (c.relname LIKE 'chunks_p%%' OR c.relname LIKE 'term_stats_p%%') ORDER BY 2 DESC LIMIT 2")
    return ", ".join(f"{r['relname']} {r['tuples']} pending" for r in rows)


async def paired(db, queries, vectors, label: str) -> None:
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request

    tuned = engine.tuned_connections()
    times = {name: [] for name in TENANTS}
    for i, (query, vector) in enumerate(zip(queries, vectors)):
        request = parse_request({"query": query, "k": 10, "alpha": 0.7}, max_k=100, max_query_chars=2000)
        for name in (("pending", "direct") if i % 2 == 0 else ("direct", "pending")):
            started = time.perf_counter()
            await engine.search(db, request, [TENANTS[name]], vector, tuned=tuned, limit=10)
            times[name].append((time.perf_counter() - started) * 1000)
    ratio = statistics.median(p / d for p, d in zip(times["pending"], times["direct"]))
    print(f"{label:34} fastupdate on (main) {statistics.median(times['pending']):6.2f} ms, "
          f"off (0022) {statistics.median(times['direct']):6.2f} ms; paired ratio {ratio:.2f}; {await pending(db)}",
          flush=True)


async def run(args) -> None:
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze

    db = await lab_postgres.migrated_database(args.dsn)
    try:
        await db.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        texts = loader.read_passages(load_search.DATA / "corpus.jsonl")
        for entity in TENANTS.values():
            await loader.load_synthetic(db, entity, texts, args.chunks, model_id=load_search.MODEL_ID,
                                        dimension=load_search.DIMENSION)
        await vacuum_analyze(db)
        parts = {name: await partition(db, entity) for name, entity in TENANTS.items()}
        assert parts["pending"] != parts["direct"], parts
        for index in (f"{parts['pending']}_tsv_idx",
                      f"term_stats_p{parts['pending'].removeprefix('chunks_p')}_term_idx"):
            await db.execute(f"ALTER INDEX {index} SET (fastupdate = on)")
        print(f"partitions {parts}; fastupdate back on for the 'pending' tenant's", flush=True)
        queries, vectors = lab_postgres.queries(args.queries)
        await paired(db, queries, vectors, "warm-up")
        await paired(db, queries, vectors, f"vacuumed, {args.chunks} chunks each")
        total = args.chunks
        for added in [int(a) for a in args.added.split(",")]:
            for entity in TENANTS.values():
                await loader.load_synthetic(db, entity, texts, added, model_id=load_search.MODEL_ID,
                                            dimension=load_search.DIMENSION, seed=total, offset=total,
                                            batch_documents=25)
            total += added
            await paired(db, queries, vectors, f"{total} chunks each, not vacuumed")
        await vacuum_analyze(db)
        await paired(db, queries, vectors, f"{total} chunks each, vacuumed")
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--added", default="1500,2500")
    parser.add_argument("--queries", type=int, default=None)
    args = parser.parse_args()
    with lab_postgres.embedded_postgres("edgeindex-gin-ab-", autovacuum=False) as args.dsn:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
