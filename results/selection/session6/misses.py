"""Tool misses of the tuning half by kind (offline; uses tune_select's harness)."""
import asyncio, json, sys, collections
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.evaluation.selection_split import split_of

async def main(part="tune"):
    folder = Path("../shared/data/tools-bfcl")
    emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / "tools.jsonl"); queries = ts._jsonl(folder / "queries.jsonl")
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []})
    tl._cache.clear()
    cat = await tl.catalogue_for(db, ["e"])
    kinds = collections.Counter(); missk = collections.Counter()
    for q in queries:
        if split_of(q["id"]) != part: continue
        exp = q["expected"]
        ans = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
        names = [t["name"] for t in ans["tools"]]
        kinds[q["bfcl_category"]] += len(exp)
        miss = [e for e in exp if e not in names[:5]]
        if not miss: continue
        missk[q["bfcl_category"]] += len(miss)
        qv = await emb.embed_query(q["query"])
        sc = cat.catalogue.score(q["query"], qv)
        order = list(np.argsort(-sc.fused))
        nm = [cat.rows[i]["name"] for i in order]
        print(f"\n## {q['id']} [{q['bfcl_category']}] segs={len(tl.segments(q['query']))} {q['query'][:300]}")
        print("  expected:", exp, " got:", [(t['name'], t['reason']) for t in ans['tools']])
        for m in miss:
            print(f"  MISS {m}: whole-rank {nm.index(m)} z={sc.fused[order[nm.index(m)]]:.2f}")
    print("\nneeded per kind", dict(kinds)); print("missed per kind", dict(missk))
    emb.save()
asyncio.run(main(*sys.argv[1:]))
