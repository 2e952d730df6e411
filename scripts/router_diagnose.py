"""Per-dataset view of the router's training rows: each feature's mean, each bin's NDCG@10, the
per-query oracle's choices, and the text-vs-blend gain by quartile of the probe cosine.

usage: python scripts/router_diagnose.py results/router/training-v2.json
"""
import sys

import numpy as np

from edgeindex.routing import train as T
from edgeindex.routing.features import NAMES

data = [d for p in sys.argv[1:] for d in T.load(p)]
names = [d["dataset"] for d in data]
print("feature means per set:", " ".join(f"{n:>16}" for n in names))
for f in NAMES:
    print(f"  {f:<24}" + " ".join(f"{np.mean([r['features'].get(f, 0) for r in d['rows'].values()]):>16.3f}"
                                for d in data))
bins = [b["name"] for b in data[0]["bins"]]
print("\nNDCG@10 per bin:")
for b in bins:
    print(f"  {b:<24}" + " ".join(f"{np.mean([r['ndcg'][b] for r in d['rows'].values()]):>16.4f}" for d in data))
print("\noracle's choice (ties go to the fixed blend, then the lower alpha):")
for d in data:
    order = sorted(bins, key=lambda b: (b != "hybrid-0.8", b))
    chosen = [max(order, key=lambda b: r["ndcg"][b]) for r in d["rows"].values()]
    print(f"  {d['dataset']:<18}" + ", ".join(f"{b} {chosen.count(b)}" for b in bins if chosen.count(b)))
print("\nNDCG@10 of text / hybrid-0.2 / hybrid-0.8 / vector by quartile of probe_cosine:")
for d in data:
    rows = list(d["rows"].values())
    v = np.array([r["features"]["probe_cosine"] for r in rows])
    edges = np.quantile(v, [0, .25, .5, .75, 1])
    parts = []
    for i in range(4):
        sel = [r for r, x in zip(rows, v, strict=True) if edges[i] <= x <= edges[i + 1]]
        parts.append(f"Q{i + 1} [{edges[i]:.2f}-{edges[i + 1]:.2f}] " + "/".join(
            f"{np.mean([r['ndcg'][b] for r in sel]):.2f}" for b in ("text", "hybrid-0.2", "hybrid-0.8", "vector")))
    print(f"  {d['dataset']:<18}" + "  ".join(parts))
