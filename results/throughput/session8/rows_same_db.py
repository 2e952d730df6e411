"""Rows of the one statement and of the two-statement path on one database, for the SQL of a checkout
(8th session: vec_columns_tried_dropped.diff against main). The checkout is chosen by PYTHONPATH (a folder
holding an `edgeindex` symlink to its shared/) and CMP_ROOT; the database by CMP_DSN (an embedded Postgres
kept running between the runs: HNSW graphs of two fresh loads differ). Writes a JSON file of result lists.
"""
# rows of the one statement and the two-statement path, on this checkout: written to a JSON file
import asyncio, json, sys, tempfile
from pathlib import Path
import numpy as np
ROOT = Path(__import__("os").environ.get("CMP_ROOT", "/work/wt-searchtp"))

async def main(dsn, out):
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request
    db = Database(dsn, max_size=2)
    await db.migrate(ROOT / "infra" / "migrations", model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
    await db.open()
    data = Path('/work/shared/data/msmarco')
    texts = loader.read_passages(data / "corpus.jsonl")
    have = (await db.fetchone("SELECT count(*) AS n FROM chunks"))["n"]
    if not have:
     await loader.load_synthetic(db, "big", texts, 3000, model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384, seed=1)
     await loader.load_synthetic(db, "small", texts, 200, model_id="sentence-transformers/all-MiniLM-L6-v2", dimension=384, seed=2, offset=3000)
    await vacuum_analyze(db)
    qs = [json.loads(l)["text"] for l in open(data / "queries.jsonl")]
    rng = np.random.default_rng(5)
    tuned = engine.tuned_connections()
    res = []
    shapes = [{}, {"alpha": 0.3}, {"fusion": "rrf"}, {"dedupe": True}, {"alpha": 1.0}, {"alpha": 0.0}, {"k": 30}]
    for i, q in enumerate(qs[:30]):
        for ents in (["big"], ["small"], ["big", "small"]):
            for shape in shapes:
                req = parse_request({"query": q, "k": 10, **shape}, max_k=100, max_query_chars=2000)
                emb = rng.standard_normal(384).astype(np.float32); emb /= np.linalg.norm(emb)
                _, rows = await engine.search(db, req, ents, emb, tuned=tuned, limit=req.k)
                lex = await engine.lexical(db, req, ents, tuned=tuned, limit=req.k)
                rows2 = await engine.retrieve(db, req, ents, emb, tuned=tuned, limit=req.k, lexical_result=lex)
                for r in (rows, rows2):
                    res.append([[str(x["chunk_id"]), x["score"], x["vector"], x["text"], x["trigram"], x["position"], x["start_char"], x["end_char"], str(x["document_id"])] for x in r])
    await db.close()
    json.dump(res, open(out, "w"))
    print(len(res), sum(len(r) for r in res))
import os
asyncio.run(main(os.environ["CMP_DSN"], sys.argv[1]))
