"""Spider database top1 with extra score terms (offline experiments on tune_select's harness)."""
import asyncio, sys, json
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import indices as ix
from edgeindex.selection.scoring import zscore
from edgeindex.selection.text import split_identifier
from edgeindex.evaluation.selection_split import split_of

async def setup():
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
    cat = await ix.catalogue_for(db, ["e"])
    qv = [await emb.embed_query(q["query"]) for q in queries]
    emb.save()
    return emb, defs, cat, queries, qv

def evaluate(names, queries, finals):
    res = {"tune": [], "held_out": []}
    for q, f in zip(queries, finals):
        res[split_of(q["id"])].append(float(names[int(np.argmax(f))] == q["expected"]))
    return {k: round(float(np.mean(v)), 4) for k, v in res.items()}

def base_parts(cat, q, v):
    n = cat.catalogue.size
    s = cat.catalogue.score(q, v); p = cat.parts.score(q, v)
    return s, p
