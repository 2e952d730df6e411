"""Postgres CPU per one-statement search (400 searches, big tenant, default request) on CMP_DSN's database
(rows_same_db.py loads it), for the checkout on PYTHONPATH; postmaster and backends' CPU from /proc."""
import asyncio, json, os, sys, time
from pathlib import Path
import numpy as np, psutil
async def main(dsn, rounds):
    from edgeindex.bindings.database import Database
    from edgeindex.search import engine
    from edgeindex.search.request import parse_request
    db = Database(dsn, max_size=1); await db.open()
    qs = [json.loads(l)["text"] for l in open('/work/shared/data/msmarco/queries.jsonl')]
    rng = np.random.default_rng(9); tuned = engine.tuned_connections()
    pm = psutil.Process(int(open('/tmp/searchu8/pgdata/postmaster.pid').read().split()[0]))
    def pgcpu():
        t=0
        for p in [pm, *pm.children()]:
            try: c=p.cpu_times(); t+=c.user+c.system
            except psutil.NoSuchProcess: pass
        return t
    embs=[]
    for i in range(rounds):
        e=rng.standard_normal(384).astype(np.float32); e/=np.linalg.norm(e); embs.append(e)
    for warm in (1,0):
        c0=pgcpu(); t0=time.perf_counter()
        for i in range(rounds if not warm else 20):
            req = parse_request({"query": qs[i%50], "k": 10, "alpha": 0.7 - i*1e-6}, max_k=100, max_query_chars=2000)
            await engine.search(db, req, ["big"], embs[i], tuned=tuned, limit=10)
        if not warm:
            print(f"{sys.argv[1]}: postgres CPU {(pgcpu()-c0)/rounds*1000:.3f} ms/search, wall {(time.perf_counter()-t0)/rounds*1000:.3f}")
    await db.close()
asyncio.run(main(os.environ["CMP_DSN"], 400))
