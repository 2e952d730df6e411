"""Where the one search statement's time goes on load_search.py's data (12,000 chunks of one tenant):
EXPLAIN (ANALYZE) of the statement an uncached hybrid search runs (`engine.SEARCH`), for MS MARCO
queries, with each plan node's own time (its actual total less its children's) summed over them.

  .venv/bin/python results/throughput/session19/explain_lab.py [--chunks 12000] [--queries 40] [--show 1]
      [--query-vectors FILE]

A fresh embedded Postgres in a temp folder; chunk and query vectors random unit vectors (load_search's
chunks were until the twenty-first session). With --query-vectors (an .npy of the queries' real vectors,
session21/embed_chunks.py), the chunks carry the real model's vectors (load_search.chunk_vectors) and the
queries those.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
from collections import defaultdict

import lab_postgres
from lab_postgres import load_search

_NODE = re.compile(r"^(\s*)(?:->\s+)?(.*?)\s+\(cost=.*actual time=([\d.]+)\.\.([\d.]+) rows=[\d.]+ loops=(\d+)\)")


def own_times(plan: list[str]) -> list[tuple[str, float]]:
    """(node label, own ms) per plan node: total time x loops, less its children's."""
    nodes = []  # (indent, label, total)
    for line in plan:
        m = _NODE.match(line)
        if m:
            label = re.sub(r"\s+", " ", m.group(2))[:90]
            nodes.append((len(m.group(1)), label, float(m.group(4)) * int(m.group(5))))
    result = []
    for i, (indent, label, total) in enumerate(nodes):
        children = 0.0
        for j in range(i + 1, len(nodes)):
            if nodes[j][0] <= indent:
                break
            # a direct child: the next deeper level under this node
            deeper = [n[0] for n in nodes[i + 1:j + 1] if n[0] > indent]
            if nodes[j][0] == min(deeper):
                children += nodes[j][2]
        result.append((label, max(total - children, 0.0)))
    return result


async def run(args) -> None:
    import numpy as np
    from edgeindex.evaluation import explain as ex
    from edgeindex.search.request import parse_request

    db = await lab_postgres.migrated_database(args.dsn)
    try:
        real = args.query_vectors is not None
        await load_search.load_chunks(args.dsn, args.chunks,
                                      load_search.chunk_vectors(args.chunks, "real" if real else "random"))
        queries, vectors = lab_postgres.queries(args.queries)
        if real:
            vectors = np.load(args.query_vectors)[:len(queries)]
        totals = defaultdict(float)
        statement_ms = []
        for i, (query, vector) in enumerate(zip(queries, vectors)):
            request = parse_request({"query": query, "k": 10, "alpha": 0.7 - i * 1e-6}, max_k=100, max_query_chars=2000)
            await ex.explain_one(db, request, [load_search.ENTITY], np.asarray(vector))  # warm
            plan = await ex.explain_one(db, request, [load_search.ENTITY], np.asarray(vector))
            for line in plan:
                if line.strip().startswith("Execution Time"):
                    statement_ms.append(float(line.split(":")[1].split()[0]))
            for label, ms in own_times(plan):
                totals[label] += ms
            if i < args.show:
                print("\n".join(line for line in plan if not line.strip().startswith("Buffers")))
        n = len(statement_ms)
        print(f"\n{n} queries: execution median {statistics.median(statement_ms):.3f} ms, mean {statistics.mean(statement_ms):.3f}")
        print("own time per query, by plan node (top 25):")
        for label, ms in sorted(totals.items(), key=lambda kv: -kv[1])[:25]:
            print(f"  {ms / n:7.3f} ms  {label}")
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=12_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--show", type=int, default=1)
    parser.add_argument("--query-vectors", help="the queries' real vectors (.npy): real vectors for the chunks too")
    args = parser.parse_args()
    with lab_postgres.embedded_postgres("edgeindex-explain-lab-") as args.dsn:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
