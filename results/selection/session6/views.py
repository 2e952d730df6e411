"""Experiment: a tool's vector score from its two views (whole text, description) as a blend instead of the max."""
import asyncio, sys, os
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import scoring as sc

W = float(os.environ.get("W", "0.5"))    # weight of the best view; 1 - W to the whole-text view
def raise_to_best(self, vector, qv):
    best = np.maximum.reduceat(self.vectors @ qv, self.starts)
    vector[self.owners] = W * np.maximum(vector[self.owners], best) + (1 - W) * vector[self.owners]
sc.ExampleSet.raise_to_best = raise_to_best
print("W", W)
asyncio.run(ts.run_tools(Path("../shared/data/tools-bfcl"), ts.MemoEmbedder(), False))
