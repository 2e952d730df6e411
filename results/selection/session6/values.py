"""Experiment: embed the Spider question without its value words (quoted spans; with CAPS=1 also capitalised
words after the first), to see how much value words mislead the vector channel."""
import asyncio, sys, os, re
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts

QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
def strip(q):
    q = QUOTED.sub(" ", q)
    if os.environ.get("CAPS"):
        words = q.split()
        q = " ".join([words[0]] + [w for w in words[1:] if not w[:1].isupper()]) if words else q
    return q
orig = ts.MemoEmbedder.embed_query
async def embed_query(self, text):
    return await orig(self, strip(text))
ts.MemoEmbedder.embed_query = embed_query
asyncio.run(ts.run_indices(Path("../shared/data/indices-spider"), ts.MemoEmbedder(), False))
