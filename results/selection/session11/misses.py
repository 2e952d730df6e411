"""Today's tuning-half misses: expected, sent (baseline), the missed tool's whole-request rank, and each
sentence's / clause's top 3 (fused z) with the missed tool's rank there
(the committed misses_*.txt keep the sentences' lines only: grep -v "^   clau ")."""
import sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *

part = sys.argv[1] if len(sys.argv) > 1 else "tune"
n = 0
for d in DATA:
    if d["split"] != part: continue
    got = [NAMES[i] for i in baseline(d)][:K]
    exp = d["q"]["expected"]
    miss = [e for e in exp if e not in got]
    if not miss: continue
    n += 1
    f = d["whole"]["fused"]; order = list(np.argsort(-f, kind="stable"))
    idx = {nm: i for i, nm in enumerate(NAMES)}
    print(f"#{n} {d['q']['id']} ({len(exp)} needed) {d['q']['query'][:300]!r}")
    print("   expected:", exp)
    print("   sent    :", got, [round(float(f[idx[g]]), 2) for g in got])
    for m in miss:
        print(f"   MISSED {m}: whole rank {order.index(idx[m]) + 1} z {f[idx[m]]:.2f}")
    for kind in ("sents", "clauses"):
        for s in d[kind]:
            o = list(np.argsort(-s["fused"], kind="stable"))
            top = [(NAMES[i], round(float(s["fused"][i]), 1)) for i in o[:3]]
            mr = {m: o.index(idx[m]) + 1 for m in miss}
            print(f"   {kind[:4]} {s['text'][:70]!r}: {top} missed ranks {mr}")
    print()
