"""Per-sentence view of chosen multi-sentence misses: each sentence's best tool, its z's, and the missed tool's rank."""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore
from edgeindex.selection.definitions import count_tokens, parse_tool

IDS = sys.argv[1].split(",")
async def main():
    folder = Path("../shared/data/tools-bfcl"); emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / "tools.jsonl"); queries = {q["id"]: q for q in ts._jsonl(folder / "queries.jsonl")}
    defs = [parse_tool(t, f"t{i}") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs]); dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category, "tags": [], "requires": [],
             "tokens": 1, "model_id": "m", "embedding": v, "description_embedding": dv if d.description else None, "used": 0, "shown": 0}
            for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []}); tl._cache.clear()
    cat = await tl.catalogue_for(db, ["e"])
    names = [r["name"] for r in cat.rows]
    for qid in IDS:
        q = queries[qid]; print("\n##", qid, q["expected"])
        for part in tl.segments(q["query"]):
            s = cat.catalogue.score(part, await emb.embed_query(part)); order = list(np.argsort(-s.fused)); vz = zscore(s.vector)
            b = order[0]
            ranks = {e: order.index(names.index(e)) for e in q["expected"]}
            print(f"  [{names[b]} vz={vz[b]:.2f} f={s.fused[b]:.2f}] ranks={ranks} :: {part[:120]}")
asyncio.run(main())
