"""Experiment: add gamma * (share of a tool's name words the request uses) to the fused score."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl, scoring as sc
from edgeindex.selection.text import terms, split_identifier, query_terms

GAMMA = float(os.environ.get("GAMMA", "0.5"))
MODE = os.environ.get("MODE", "share")      # share | full
orig_build, orig_score = tl._build, sc.Catalogue.score

async def build(db, entity_ids):
    cat = await orig_build(db, entity_ids)
    cat.catalogue.name_terms = [frozenset(terms(" ".join(split_identifier(r["name"])))) for r in cat.rows]
    return cat
tl._build = build

def score(self, query, qv, *, alpha=sc.ALPHA):
    s = orig_score(self, query, qv, alpha=alpha)
    names = getattr(self, "name_terms", None)
    if names is not None:
        q = set(query_terms(query))
        cover = np.array([len(n & q) / len(n) if n else 0.0 for n in names], np.float32)
        if MODE == "full":
            cover = (cover >= 1.0).astype(np.float32)
        s.fused = s.fused + GAMMA * cover
    return s
sc.Catalogue.score = score
print("gamma", GAMMA, MODE)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
