"""Spider databases: sweep of the field-vector constants on the tuning half (offline, real select code)."""
import asyncio, sys, itertools
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices as ix
from edgeindex.evaluation.selection_split import split_of

async def main(tables, grid, part="tune"):
    folder = Path("../shared/data/indices-spider"); emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / ("indices_tables.jsonl" if tables else "indices.jsonl"))
    queries = ts._jsonl(folder / ("queries_tables.jsonl" if tables else "queries.jsonl"))
    defs = [ix.parse_index(r, f"i[{i}]") for i, r in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    rows = [{"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields),
             "profile": {}, "embedding": v, "field_vectors": await ts._field_vectors(emb, d)} for d, v in zip(defs, vecs)]
    part_rows = [(d.name, p, f) for d in defs for p, f in ix.parts(d).items()]
    pvecs = await emb.embed([ix.part_text(p, f) for _, p, f in part_rows]) if part_rows else []
    parts = [{"index_name": n, "part": p, "fields": f, "embedding": v} for (n, p, f), v in zip(part_rows, pvecs)]
    db = ts.FakeDB({"index_catalog": rows, "index_part_catalog": parts}); ix._cache.clear()
    chosen = [q for q in queries if part == "all" or split_of(q["id"]) == part]
    for combo in grid:
        fv.FIELD_TOP, fv.FIELD_WEIGHT, fv.PART_FIELD_TOP, fv.PART_FIELD_WEIGHT, ix.PART_WEIGHT = combo
        top1, alln = [], []
        for q in chosen:
            exp = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
            a = await ix.select(db, emb, ["e"], ix.SelectRequest(q["query"], None, 5))
            ranked = [i["name"] for i in a["indices"]]
            top1.append(ranked[0] in exp); alln.append(all(e in ranked[:5] for e in exp))
        print(combo, "top1", round(float(np.mean(top1)), 4), "all_needed@5", round(float(np.mean(alln)), 4), flush=True)
    emb.save()

if __name__ == "__main__":
    tables = "--tables" in sys.argv
    part = "held_out" if "--held-out" in sys.argv else "tune"
    grid = [(5, 0.5, 2, 0.5, 0.7)] + [c for c in itertools.product((4, 5, 6, 8), (0.4, 0.6, 0.75), (1, 2, 3), (0.5, 0.75, 1.0), (0.7,))]
    if "--mid" in sys.argv:
        grid = [(5, w, 2, pw, 0.7) for w in (0.6, 0.75, 1.0) for pw in (0.75, 1.0, 1.25)] + [(4, 0.75, 2, 1.0, 0.7), (5, 0.75, 3, 1.0, 0.7), (5, 0.75, 1, 1.0, 0.7)]
    if "--pick" in sys.argv:
        grid = [(5, 0.5, 2, 0.5, 0.7), (5, 0.6, 2, 1.0, 0.7)]
    if "--small" in sys.argv:
        grid = [(5, 0.5, 2, 0.5, 0.7), (5, 0.5, 2, 0.5, 0.6), (5, 0.5, 2, 0.5, 0.8), (5, 0.6, 2, 0.75, 0.7), (6, 0.6, 2, 0.75, 0.7), (5, 0.75, 2, 1.0, 0.7)]
    asyncio.run(main(tables, grid, part))
