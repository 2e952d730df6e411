"""Experiment: a sentence whose best tool is not clearly ahead of its second also sends the second."""
import asyncio, sys, os, numpy as np
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import tools as tl
from pathlib import Path
DELTA = float(os.environ.get("DELTA", "0.3"))
def picks(parts, vectors, cat):
    first, second = [], []
    for part, vector in zip(parts, vectors):
        scores = cat.catalogue.score(part, vector)
        order = np.argsort(-scores.fused)
        best, nxt = int(order[0]), int(order[1])
        vz = tl._zscore(scores.vector)
        if vz[best] >= tl.SEGMENT_Z and scores.fused[best] >= tl.SEGMENT_Z:
            first.append((float(vz[best]), best, part))
            if scores.fused[best] - scores.fused[nxt] < DELTA and scores.fused[nxt] >= tl.SEGMENT_Z:
                second.append((float(vz[nxt]), nxt, part))
    out = [(i, p) for _, i, p in sorted(first, key=lambda x: -x[0])]
    return out + [(i, p) for _, i, p in sorted(second, key=lambda x: -x[0])]
if DELTA > 0:
    tl._segment_picks = picks
emb = ts.MemoEmbedder()
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), emb, False))
