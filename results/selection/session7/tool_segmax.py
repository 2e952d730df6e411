"""Tools: a tool ranked by its best of the whole request's and each sentence's fused z (offline)."""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.evaluation.selection_split import split_of

async def main():
    folder = Path("../shared/data/tools-bfcl"); emb = ts.MemoEmbedder()
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
    names = [r["name"] for r in cat.rows]
    pre = []
    for q in queries:
        parts = tl.segments(q["query"]); parts = parts if len(parts) >= 2 else []
        vs = await tl.embed_texts(emb, [q["query"], *parts])
        whole = cat.catalogue.score(q["query"], vs[0]).fused
        segs = np.vstack([cat.catalogue.score(p, v).fused for p, v in zip(parts, vs[1:])]) if parts else None
        base = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
        pre.append((q, whole, segs, [t["name"] for t in base["tools"]][:5]))
    emb.save()
    def run(c, lead):
        res = {"tune": [], "held_out": []}
        for q, whole, segs, base in pre:
            if c is None:
                got = base
            else:
                combined = whole if segs is None else np.maximum(whole, segs.max(0) - c)
                order = list(np.argsort(-whole, kind="stable")[:lead])
                order += [i for i in np.argsort(-combined, kind="stable") if i not in order]
                got = [names[i] for i in order[:5]]
            res[split_of(q["id"])].append(sum(e in got for e in q["expected"]) / len(q["expected"]))
        return {k: round(float(np.mean(v)), 4) for k, v in res.items()}
    print("base", run(None, 0))
    for lead in (0, 1, 2):
        for c in (0.0, 0.5, 1.0, 1.5, 2.0):
            print(lead, c, run(c, lead), flush=True)
asyncio.run(main())
