"""Experiment: rerank by how many of a tool's required parameters the request mentions (tune half only)."""
import asyncio, sys, os, numpy as np
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import tools as tl, scoring
from edgeindex.selection.text import terms
from pathlib import Path
GAMMA = float(os.environ.get("GAMMA", "0.5")); MODE = os.environ.get("MODE", "req")
orig_state = tl.catalogue_state
async def state(db, ids):
    cat, how = await orig_state(db, ids)
    if not hasattr(cat.catalogue, "_req"):
        req = []
        for row in cat.rows:
            p = row["parameters"] or {}
            props = p.get("properties") or {}
            names = (p.get("required") or list(props)) if MODE == "req" else list(props)
            req.append([set(terms(str(n))) | set(terms(str((props.get(n) or {}).get("description", ""))[:0])) for n in names])
        cat.catalogue._req = req
    return cat, how
tl.catalogue_state = state
orig_score = scoring.Catalogue.score
def score(self, query, qv, **kw):
    s = orig_score(self, query, qv, **kw)
    req = getattr(self, "_req", None)
    if req is None or GAMMA == 0:
        return s
    q = set(terms(query))
    cov = np.array([(sum(1 for t in ts_ if t & q) / len(ts_)) if ts_ else 0.0 for ts_ in req], np.float32)
    return scoring.Scores(s.vector, s.text, (s.fused + GAMMA * cov).astype(np.float32))
scoring.Catalogue.score = score
emb = ts.MemoEmbedder()
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), emb, False))
