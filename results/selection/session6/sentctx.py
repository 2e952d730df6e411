"""Experiment: a sentence's pick scored with the whole request as context (sentence z + BETA * request z)."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore

BETA = float(os.environ.get("BETA", "0.3"))
CTX = {}
orig_select = tl.select
async def select(db, emb, ids, req):
    cat = await tl.catalogue_for(db, ids)
    CTX["whole"] = cat.catalogue.score(req.query, await emb.embed_query(req.query)).fused
    return await orig_select(db, emb, ids, req)
def picks(parts, vectors, cat):
    out = []
    for part, vector in zip(parts, vectors):
        s = cat.catalogue.score(part, vector)
        combined = s.fused + BETA * CTX["whole"]
        best = int(np.argmax(combined))
        vz = float(zscore(s.vector)[best])
        if vz >= tl.SEGMENT_Z and s.fused[best] >= tl.SEGMENT_Z:
            out.append((vz, best, part))
    return [(i, p) for _, i, p in sorted(out, key=lambda p: -p[0])]
tl.select, tl._segment_picks = select, picks
print("BETA", BETA)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
