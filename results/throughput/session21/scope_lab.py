"""The one search statement with the scope settled by entity_stats (no document read for a big tenant with no
document filter) against the scope counted from the documents (before), paired on one database.

  .venv/bin/python results/throughput/session21/scope_lab.py [--rounds 6]

load_search.py's 12,000 chunks with the real model's vectors (load_search.chunk_vectors, cached) and its
50 queries with their real query vectors (/tmp/s21/query_vectors.npy, from embed_chunks.py). Each statement
runs as a search runs it (plan_reuse: literals written in, prepared once on a generic-plan connection, so no
planning in the timed runs); the two texts alternate per query, their order flipping every round. Times are
the worker's wall time per statement (Postgres's execution plus one round trip).
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

OLD_SCOPE = """scope AS (
    SELECT count(*) > 0 AS nonempty,
           count(*) <= %(exact_max_docs)s AND coalesce(sum(chunk_count), 0) <= %(exact_max_chunks)s AS exact
    FROM docs
)"""


async def run(args) -> None:
    import numpy as np
    from edgeindex.search import engine, plan_reuse
    from edgeindex.search.request import parse_request

    db = await lab_postgres.migrated_database(args.dsn)
    try:
        await load_search.load_chunks(args.dsn, 12_000, load_search.chunk_vectors(12_000, "real"))
        queries, _ = lab_postgres.queries()
        vectors = np.load("/tmp/s21/query_vectors.npy")
        tuned = engine.tuned_connections()
        times = {"documents (before)": [], "entity_stats (after)": []}
        rows_same = 0
        async with engine._connection(db, tuned, generic=True) as conn:
            for round_ in range(args.rounds):
                per = {name: [] for name in times}
                names = list(times) if round_ % 2 == 0 else list(reversed(times))
                for i, (query, vector) in enumerate(zip(queries, vectors)):
                    request = parse_request({"query": query, "k": 10}, max_k=100, max_query_chars=2000)
                    params = engine.build_params(request, [load_search.ENTITY], vector, limit=10)
                    idle, size = engine.idle_parts(params), engine.dimension(params)
                    new_sql = engine._variant_sql("search", idle, size)
                    start = new_sql.index("scope AS MATERIALIZED (")
                    end = new_sql.index("LIMIT 1\n)", start) + len("LIMIT 1\n)")
                    old_sql = new_sql[:start] + OLD_SCOPE + new_sql[end:]
                    got = {}
                    for name in names:
                        sql = old_sql if name.startswith("documents") else new_sql
                        statement = plan_reuse.statement_for((name, idle, size), sql, params)
                        await plan_reuse.execute(conn, statement, params)  # prepared (first round: planned)
                        started = time.perf_counter()
                        got[name] = await plan_reuse.execute(conn, statement, params)
                        per[name].append((time.perf_counter() - started) * 1000)
                    a, b = (got[name] for name in times)
                    rows_same += [r["chunk_id"] for r in a] == [r["chunk_id"] for r in b]
                for name in times:
                    times[name].append(statistics.median(per[name]))
        for name, values in times.items():
            print(f"{name:22} ms per search statement (median per round): "
                  f"{', '.join(f'{v:.3f}' for v in values)}; median {statistics.median(values):.3f}")
        ratios = [b / a for a, b in zip(*times.values())]
        print(f"after / before: {statistics.median(ratios):.3f} (median of per-round ratios); same rows in "
              f"{rows_same} of {args.rounds * len(queries)} searches")
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with lab_postgres.embedded_postgres("edgeindex-scope-lab-") as args.dsn:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
