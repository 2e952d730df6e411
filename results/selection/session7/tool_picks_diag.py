"""Tools, tuning half: for each missed needed tool of a multi-sentence request, was it a sentence's pick
(cut by the slot limit), a sentence's second, or no sentence's choice at all? (offline diagnostic)"""
import asyncio, sys, collections
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.evaluation.selection_split import split_of

async def main(part):
    folder = Path("../shared/data/tools-bfcl"); emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / "tools.jsonl"); queries = ts._jsonl(folder / "queries.jsonl")
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs]); dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []}); tl._cache.clear()
    cat = await tl.catalogue_for(db, ["e"]); names = [r["name"] for r in cat.rows]
    kinds = collections.Counter()
    for q in queries:
        if split_of(q["id"]) != part: continue
        a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
        got = [t["name"] for t in a["tools"]][:5]
        miss = [e for e in q["expected"] if e not in got]
        if not miss: continue
        parts = tl.segments(q["query"])
        if len(parts) < 2:
            kinds["one sentence"] += len(miss); continue
        vs = await tl.embed_texts(emb, [q["query"], *parts])
        picks = [names[i] for i, _ in tl._segment_picks(parts, vs[1:], cat)]
        for m in miss:
            j = names.index(m); kind = None
            if m in picks: kind = "a sentence's pick, cut by the slots"
            else:
                for p, v in zip(parts, vs[1:]):
                    s = cat.catalogue.score(p, v); order = list(np.argsort(-s.fused))
                    r = order.index(j)
                    if r == 0: kind = kind or "a sentence's best, below SEGMENT_Z"
                    elif r < 3: kind = kind or f"a sentence's 2nd-3rd"
                kind = kind or "no sentence's top 3"
            kinds[kind] += 1
            print(q["id"], m, kind, "| picks:", picks[:5], "| got:", got)
    print(dict(kinds))
asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "tune"))
