"""EXPLAIN (ANALYZE, BUFFERS) of the two search statements over 50k chunks: are HNSW and GIN used?

Loads real passage text (MS MARCO sample, repeated with variations) with random unit
vectors — plans depend on sizes and statistics, not on relevance — into a fresh
embedded Postgres (or --dsn), runs VACUUM (ANALYZE), then explains a few representative
searches and checks which index each executed scan used:

  .venv/bin/python scripts/explain_search.py               # 50k chunks, fresh embedded Postgres
  .venv/bin/python scripts/explain_search.py --dsn postgresql://... --chunks 20000

Exits non-zero if the unfiltered search of a large tenant does not use both the HNSW
index and the full-text GIN index, or a selective filter does not take the exact path.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "msmarco" / "corpus.jsonl"
MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384


async def load(db, chunks: int, texts: list[str]) -> dict[str, int]:
    from edgeindex.evaluation import loader

    # One large tenant, one mid-sized, and small ones sharing partitions with them.
    sizes = {"explain-big": int(chunks * 0.6), "explain-mid": int(chunks * 0.2)}
    small = chunks - sum(sizes.values())
    for i in range(8):
        sizes[f"explain-small-{i}"] = small // 8
    offset = 0
    for n, (entity, size) in enumerate(sizes.items()):
        started = time.perf_counter()
        written = await loader.load_synthetic(db, entity, texts, size, model_id=MODEL_ID, dimension=DIMENSION,
                                              seed=n, offset=offset)
        offset += size
        print(f"  {entity:<16} {written:>6} chunks  ({time.perf_counter() - started:.1f}s)", flush=True)
    return sizes


async def run(args) -> int:
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import explain as ex
    from edgeindex.evaluation.loader import read_passages
    from edgeindex.search.request import parse_request

    db = Database(args.dsn, max_size=2)
    await db.migrate(ROOT / "infra" / "migrations", model_id=MODEL_ID, dimension=DIMENSION)
    await db.open()
    try:
        have = await db.fetchone("SELECT count(*) AS n FROM chunks WHERE entity_id LIKE 'explain-%%'")
        if have["n"] < args.chunks * 0.99:
            await db.execute("DELETE FROM documents WHERE entity_id LIKE 'explain-%%'")
            texts = read_passages(CORPUS)
            print(f"loading {args.chunks} chunks ({len(texts)} distinct passages, random unit vectors)...", flush=True)
            started = time.perf_counter()
            if args.fresh:
                await ex.rebuild_hnsw(db, drop=True)
            await load(db, args.chunks, texts)
            if args.fresh:
                print("building the HNSW index...", flush=True)
                await ex.rebuild_hnsw(db, drop=False)
            print(f"loaded in {time.perf_counter() - started:.1f}s", flush=True)
        else:
            print(f"reusing {have['n']} loaded chunks")
        await ex.vacuum_analyze(db)
        total = await db.fetchone("SELECT count(*) AS n FROM chunks")
        print(f"chunks in the database: {total['n']}\n")

        kinds = await ex.index_kinds(db)
        embedding = np.random.default_rng(7).standard_normal(DIMENSION).astype(np.float32)
        embedding /= np.linalg.norm(embedding)
        cases = [
            ("large tenant, no filter", ["explain-big"], {"query": "causes of left ventricular hypertrophy"},
             {"hnsw", "fts_gin"}),
            ("two tenants, no filter", ["explain-big", "explain-mid"], {"query": "thermometer fahrenheit scale"},
             {"hnsw", "fts_gin"}),
            ("large tenant, tags filter (15% of documents: HNSW, filtered inside the scan)", ["explain-big"],
             {"query": "thermometer fahrenheit scale", "filters": {"tags": ["t1", "t2", "t3"]}}, {"hnsw", "fts_gin"}),
            ("large tenant, tag and source filters (150 documents: exact vector search)", ["explain-big"],
             {"query": "thermometer fahrenheit scale", "filters": {"tags": ["t7"], "sources": ["tickets", "blog"]}},
             set()),
            ("large tenant, two documents (exact)", ["explain-big"],
             {"query": "thermometer fahrenheit scale", "filters": {"document_ids": ["doc10", "doc11"]}}, set()),
            ("small tenant (exact vector search)", ["explain-small-3"], {"query": "thermometer fahrenheit scale"},
             set()),
            ("typo, full text only (trigram fallback)", ["explain-big"], {"query": "fahrenhiet", "alpha": 0},
             {"trigram_gin"}),
        ]
        failures = 0
        tuned = ex.engine.tuned_connections()
        for title, entities, body, expected in cases:
            request = parse_request({"k": 10, **body}, max_k=100, max_query_chars=2000)
            await ex.explain(db, request, entities, embedding)  # warm caches
            timings = []
            for _ in range(5):
                started = time.perf_counter()
                await ex.engine.retrieve(db, request, entities, embedding, tuned=tuned)
                timings.append((time.perf_counter() - started) * 1000)
            plan = await ex.explain(db, request, entities, embedding)
            used = ex.used_kinds(plan, kinds)
            ok = expected <= used and (expected or "hnsw" not in used)  # no HNSW where exact is expected
            failures += not ok
            print("=" * 100)
            print(f"{title}: {body}")
            print(f"index kinds used: {sorted(used)}   expected at least: {sorted(expected)}   "
                  f"{'OK' if ok else 'MISSING ' + str(sorted(expected - used))}")
            print(f"both statements, time over 5 runs: median {np.median(timings):.1f} ms, max {max(timings):.1f} ms")
            print("-" * 100)
            print("\n".join(plan if args.full else [line for line in plan if not line.strip().startswith("Buffers")]))
        print("=" * 100)
        print("all checks passed" if not failures else f"{failures} check(s) failed")
        return 1 if failures else 0
    finally:
        await db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dsn", help="an existing database (default: a fresh embedded Postgres in a temp folder)")
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--full", action="store_true", help="keep the Buffers lines in the printed plans")
    args = parser.parse_args()
    args.fresh = not args.dsn
    if args.dsn:
        return asyncio.run(run(args))
    from edgeindex.runtime.dev import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="edgeindex-explain-") as folder:
        postgres = EmbeddedPostgres(Path(folder) / "pgdata")
        args.dsn = postgres.start()
        try:
            return asyncio.run(run(args))
        finally:
            postgres.stop()


if __name__ == "__main__":
    sys.exit(main())
