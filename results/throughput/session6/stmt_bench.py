"""Backend CPU per search statement (plan + execute), planning time (EXPLAIN SUMMARY), results dumped.
usage: stmt_bench.py OUT.json [n] [rounds]"""
import asyncio, json, os, sys, time
from pathlib import Path
import numpy as np
ROOT = Path("/work/wt-searchtp"); sys.path.insert(0, str(ROOT))
from edgeindex.bindings.database import Database
from edgeindex.search import engine
from edgeindex.search.request import parse_request
import re as _re
_sql = engine.SEARCH_SQL
for _v in filter(None, os.environ.get("VARIANT", "").split(",")):
    before = _sql
    if _v == "noexp":
        a = _sql.index("), expanded AS MATERIALIZED ("); b = _sql.index("), fuzzy AS MATERIALIZED (")
        _sql = _sql[:a] + _sql[b:]
        _sql = _sql.replace("\n          UNION ALL\n          SELECT config, term, df, weight, false, true FROM expanded", "")
    elif _v == "nonb":
        a = _sql.index("LEFT JOIN LATERAL ("); b = _sql.index(") nb ON true") + len(") nb ON true")
        _sql = _sql[:a] + _sql[b:]
        _sql = _sql.replace("nb.neighbours", "NULL::jsonb AS neighbours")
    elif _v == "nodocf":
        a = _sql.index("AND (NOT %(document_filters)s OR EXISTS (")
        while True:
            try: a = _sql.index("AND (NOT %(document_filters)s OR EXISTS (")
            except ValueError: break
            b = _sql.index("%(updated_before)s::timestamptz)))", a) + len("%(updated_before)s::timestamptz)))")
            _sql = _sql[:a] + _sql[b:]
    assert _sql != before, _v
if os.environ.get('VARIANT'): engine.SEARCH = engine.Statement.convert(_sql)
pick = (lambda p: engine.statement('search', p)) if hasattr(engine, 'statement') and not os.environ.get('VARIANT') else None
print('picker', pick is not None)
print("variant", os.environ.get("VARIANT", ""), len(_sql))
DATA = ROOT.parent / "shared" / "data" / "msmarco"
OUT = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 100; ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
ENT = os.environ.get("ENT", "load-agents")
SHAPES = json.loads(os.environ.get("SHAPES", '[{"k": 10, "alpha": 0.7}]'))

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

async def main():
    db = Database(open("/tmp/searchu/dsn").read(), max_size=1); await db.open()
    queries = [json.loads(l)["text"] for l in open(DATA / "queries.jsonl")][:N]
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((N, 384)).astype(np.float32); vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tuned = engine.tuned_connections()
    results = {}
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        await conn.set_autocommit(True)
        pid = (await (await conn.execute("SELECT pg_backend_pid() AS p")).fetchone())["p"]; open("/tmp/searchu/bpid","w").write(str(pid)); await asyncio.sleep(float(os.environ.get("WAIT","0")))
        for shape in SHAPES:
            reqs = [parse_request({"query": q, "entity_ids": [ENT], **shape}, max_k=100, max_query_chars=2000) for q in queries]
            params = [engine.build_params(r, [ENT], v, limit=r.k) for r, v in zip(reqs, vecs)]
            for p in params[:10]:
                await engine.execute(conn, pick(p) if pick else engine.SEARCH, p)
            per = []
            for _ in range(ROUNDS):
                c0 = cpu(pid)
                for i, p in enumerate(params):
                    rows = await engine.execute(conn, pick(p) if pick else engine.SEARCH, p)
                    results[f"{json.dumps(shape)}|{i}"] = [(str(r["chunk_id"]), round(float(r["score"]), 9) if r["score"] is not None else None) for r in rows]
                per.append((cpu(pid) - c0) * 1000 / len(params))
            st = pick(params[0]) if pick else engine.SEARCH; ex = engine.Statement("EXPLAIN (SUMMARY, FORMAT JSON) " + st.text, st.names)
            plans = []
            for p in params[:50]:
                rows = await engine.execute(conn, ex, p)
                plans.append(rows[0]["QUERY PLAN"][0]["Planning Time"])
            print(f"{json.dumps(shape)}: backend CPU ms/statement {' '.join(f'{x:.2f}' for x in per)}; "
                  f"planning ms median {np.median(plans):.3f} mean {np.mean(plans):.3f}; load {os.getloadavg()[0]:.1f}")
    json.dump(results, open(OUT, "w"))
    await db.close()
asyncio.run(main())
