"""One request's top tools with their fused z, vector z and BM25 z (the harness of sweep.py, cut off).
    .venv/bin/python results/selection/toolsq13/why.py "I have 100 euro. How much is it in USD?" """
import asyncio, sys
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from pathlib import Path
ts.CACHE = Path("/tmp/toolsq13-vectors.pkl")
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore
from edgeindex.selection.definitions import count_tokens, parse_tool

async def main(query):
    emb = ts.MemoEmbedder(); folder = Path("../shared/data/tools-bfcl")
    defs = [parse_tool(t, "t") for t in ts._jsonl(folder / "tools.jsonl")]
    vecs = await emb.embed([d.embedded_text() for d in defs]); dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []})
    cat = await tl.catalogue_for(db, ["e"])
    s = cat.catalogue.score(query, await emb.embed_query(query))
    vz = zscore(s.vector); order = np.argsort(-s.fused)[:8]
    for i in order:
        print(f"{cat.rows[i]['name']:45s} fused {s.fused[i]:6.2f} share {s.fused[i]/s.fused[order[0]]:.2f} vector_z {vz[i]:5.2f}")

asyncio.run(main(sys.argv[1]))
