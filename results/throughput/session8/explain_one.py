"""EXPLAIN (ANALYZE, BUFFERS) of the one search statement as an uncached search runs it (issue 15, 8th session).

load_search.py's data (12,000 MS MARCO chunks with random unit vectors, one entity) in a fresh embedded
Postgres; a load_search request (hybrid, k 10, the default candidates); the statement text plan reuse
prepares (``engine.planned_once``), with a generic plan, as the worker runs it. Prints the plan of the
last of --runs warm runs, and per run the planning and execution time.

  .venv/bin/python results/throughput/session8/explain_one.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "msmarco"
MODEL_ID, DIMENSION, ENTITY = "sentence-transformers/all-MiniLM-L6-v2", 384, "load-agents"


async def run(dsn: str, runs: int) -> None:
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request

    db = Database(dsn, max_size=2)
    await db.migrate(ROOT / "infra" / "migrations", model_id=MODEL_ID, dimension=DIMENSION)
    await db.open()
    try:
        await loader.load_synthetic(db, ENTITY, loader.read_passages(DATA / "corpus.jsonl"), 12_000,
                                    model_id=MODEL_ID, dimension=DIMENSION)
        await vacuum_analyze(db)
        queries = [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]
        rng = np.random.default_rng(3)
        tuned = engine.tuned_connections()
        planning, execution, last = [], [], []
        for i in range(runs):
            request = parse_request({"query": queries[i % len(queries)], "k": 10, "alpha": 0.7 - i * 1e-6},
                                    max_k=100, max_query_chars=2000)
            embedding = rng.standard_normal(DIMENSION).astype(np.float32)
            embedding /= np.linalg.norm(embedding)
            params = engine.build_params(request, [ENTITY], embedding, limit=10)
            reused = engine.planned_once("search", params)
            explained = engine.Statement(f"EXPLAIN (ANALYZE, BUFFERS) {reused.text}", reused.names)
            async with db.connection() as conn:
                await engine.tune_connection(conn, tuned)
                await conn.execute("SET plan_cache_mode = force_generic_plan")
                rows = await engine.execute(conn, explained, params)
                await conn.execute("SET plan_cache_mode = force_custom_plan")
                await conn.rollback()
            last = [re.sub(r"'\[[-0-9.e, ]{40,}\]'", "'[...]'", row["QUERY PLAN"]) for row in rows]
            text = "\n".join(last)
            planning.append(float(re.search(r"Planning Time: ([\d.]+)", text).group(1)))
            execution.append(float(re.search(r"Execution Time: ([\d.]+)", text).group(1)))
        print("\n".join(last))
        print(f"\n{runs} runs: planning median {statistics.median(planning):.3f} ms, "
              f"execution median {statistics.median(execution):.3f} ms (min {min(execution):.3f}, "
              f"max {max(execution):.3f})")
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from edgeindex.runtime.dev import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="explain-one-") as folder:
        postgres = EmbeddedPostgres(Path(folder) / "pgdata")
        dsn = postgres.start()
        try:
            asyncio.run(run(dsn, args.runs))
        finally:
            postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
