"""Experiment: a sentence already served by a chosen tool (its fused z in that sentence >= COVER) adds no pick of
its own before the other sentences' picks; its pick waits at the end of the picks."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore

tl.MAX_SEGMENTS = int(os.environ.get("MAXSEG", "8"))
COVER = float(os.environ.get("COVER", "4"))
LEAD = os.environ.get("LEAD", "1") == "1"
CTX = {}
orig_select = tl.select
async def select(db, emb, ids, req):
    cat = await tl.catalogue_for(db, ids)
    CTX["lead"] = [int(i) for i in np.argsort(-cat.catalogue.score(req.query, await emb.embed_query(req.query)).fused, kind="stable")[:tl.SEGMENT_LEAD]]
    return await orig_select(db, emb, ids, req)
def picks(parts, vectors, cat):
    cands = []
    for part, vector in zip(parts, vectors):
        s = cat.catalogue.score(part, vector)
        best = int(np.argmax(s.fused)); vz = float(zscore(s.vector)[best])
        if vz >= tl.SEGMENT_Z and s.fused[best] >= tl.SEGMENT_Z:
            cands.append((vz, best, part, s.fused))
    cands.sort(key=lambda c: -c[0])
    chosen = list(CTX["lead"]) if LEAD else []
    first, later = [], []
    for vz, best, part, fused in cands:
        if best not in chosen and any(fused[c] >= COVER for c in chosen):
            later.append((best, part)); continue
        first.append((best, part)); chosen.append(best)
    return first + later
tl.select, tl._segment_picks = select, picks
print("COVER", COVER, "LEAD", LEAD)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
