"""Spider database misses by (expected, predicted) pair (offline, tune half unless an argument says otherwise)."""
import asyncio, sys, collections
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import indices as ix
from edgeindex.evaluation.selection_split import split_of

async def main(part="tune"):
    folder = Path("../shared/data/indices-spider"); emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / "indices.jsonl"); queries = ts._jsonl(folder / "queries.jsonl")
    defs = [ix.parse_index(r, f"i[{i}]") for i, r in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    rows = [{"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields),
             "profile": {}, "embedding": v} for d, v in zip(defs, vecs)]
    part_rows = [(d.name, p, f) for d in defs for p, f in ix.parts(d).items()]
    pvecs = await emb.embed([ix.part_text(p, f) for _, p, f in part_rows])
    parts = [{"index_name": n, "part": p, "fields": f, "embedding": v} for (n, p, f), v in zip(part_rows, pvecs)]
    db = ts.FakeDB({"index_catalog": rows, "index_part_catalog": parts}); ix._cache.clear()
    pairs = collections.Counter(); exp_n = collections.Counter()
    for q in queries:
        if part != "all" and split_of(q["id"]) != part: continue
        exp_n[q["expected"]] += 1
        a = await ix.select(db, emb, ["e"], ix.SelectRequest(q["query"], None, 5))
        top = a["indices"][0]
        if top["name"] != q["expected"]:
            pairs[(q["expected"], top["name"])] += 1
            rank = next((i for i, x in enumerate(a["indices"]) if x["name"] == q["expected"]), None)
            ev = next((x["evidence"] for x in a["indices"] if x["name"] == q["expected"]), None)
            print(f"{q['expected']:28s} <- {top['name']:28s} r={rank} {q['query'][:110]}\n     top ev {top['evidence']}\n     exp ev {ev}")
    print(pairs.most_common(40)); print(exp_n)
    emb.save()
asyncio.run(main(*sys.argv[1:]))
