"""Experiment: BM25 k1 / b of the tool catalogue."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
from edgeindex.selection import text, scoring as sc

K1, B = float(os.environ.get("K1", "1.2")), float(os.environ.get("B", "0.75"))
orig = text.BM25Index.__init__
def init(self, docs, *, k1=1.2, b=0.75):
    orig(self, docs, k1=K1, b=B)
sc.BM25Index.__init__ = init
print("k1", K1, "b", B)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
