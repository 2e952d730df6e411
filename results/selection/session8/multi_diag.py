"""For multi-tool misses (tuning half): each sentence's best tool, its vector z and fused z, and the choice."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *
for d in DATA:
    if d["split"] != "tune" or len(d["q"]["expected"]) < 2: continue
    got = baseline(d); exp = d["q"]["expected"]
    if all(NAMES.index(e) in got for e in exp): continue
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    print("\n#", d["q"]["id"], "exp", exp)
    print("  whole top8", [(NAMES[i], round(float(f[i]), 2)) for i in order[:8]])
    for s in d["sents"]:
        o = np.argsort(-s["fused"], kind="stable"); b = int(o[0]); vz = float(zscore(s["vec"])[b])
        print(f"  [{vz:4.1f} {s['fused'][b]:4.1f}] {NAMES[b]:30s} 2nd {NAMES[o[1]]:28s} | {s['text'][:90]}")
    print("  got", [NAMES[i] for i in got])
