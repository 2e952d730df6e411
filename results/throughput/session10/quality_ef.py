"""hnsw.ef_search 100 vs 40 on the load test's request shape (k 10, no dedupe: 40 vector candidates, no
iterative scan beyond one pass), where `edgeindex eval` cannot tell (it asks dedupe: 80 candidates, so the
scan iterates past ef_search either way). On the msmarco entity an eval run ingested (real vectors), in
process, the code on PYTHONPATH; the 43 judged queries embedded by the real model (pg_lab.py's queries.npy,
the same queries.jsonl order). Prints per ef: NDCG@10 / Recall@10 of the hybrid default (alpha 0.8) and of
vector only, by document, and the vector top 10's overlap with the exact top 10.

  quality_ef.py PGDATA ENTITY QUERIES_NPY
"""
import asyncio, json, sys
from pathlib import Path
import numpy as np

DATA = Path("/work/shared/data/msmarco")


async def main(pgdata: str, entity: str, npy: str) -> None:
    from edgeindex.runtime.dev import EmbeddedPostgres
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import metrics
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request
    dsn = EmbeddedPostgres(Path(pgdata)).start()
    db = Database(dsn, max_size=1)
    await db.open()
    queries = [json.loads(l) for l in open(DATA / "queries.jsonl")]
    vectors = np.load(npy)
    qrels: dict[str, dict[str, int]] = {}
    for line in open(DATA / "qrels" / "test.tsv"):
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    judged = [(i, q) for i, q in enumerate(queries) if q["_id"] in qrels]
    tuned = engine.tuned_connections()
    exact = {}
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        for i, q in judged:
            rows = await (await conn.execute(
                "SELECT id FROM chunks WHERE entity_id = %s ORDER BY (embedding <=> %s::vector) + 0 LIMIT 10",
                (entity, "[" + ",".join(map(str, vectors[i])) + "]"))).fetchall()
            exact[i] = [str(r["id"]) for r in rows]
        await conn.commit()
    for ef in (100, 40):
        async with db.connection() as conn:
            await conn.execute(f"SET hnsw.ef_search = {ef}")
            await conn.commit()
        out = {}
        for alpha in (0.8, 1.0):
            run, overlap = {}, []
            for i, q in judged:
                request = parse_request({"query": q["text"], "k": 10, "alpha": alpha, "cache": False},
                                        max_k=100, max_query_chars=2000)
                _, rows = await engine.search(db, request, [entity], vectors[i], tuned=tuned, limit=10)
                run[q["_id"]] = [r["document_id"] for r in rows]
                if alpha == 1.0:
                    overlap.append(len(set(str(r["chunk_id"]) for r in rows) & set(exact[i])) / 10)
            scores = metrics.evaluate({k: qrels[k] for k in run}, run, 10)
            out[alpha] = {k: round(v, 4) for k, v in scores.items() if k.lower().startswith(("ndcg", "recall"))}
            if overlap:
                out[alpha]["vector_top10_overlap_with_exact"] = round(float(np.mean(overlap)), 4)
        print(f"ef_search {ef}: hybrid 0.8 {out[0.8]}; vector {out[1.0]}", flush=True)
    await db.close()


asyncio.run(main(*sys.argv[1:4]))
