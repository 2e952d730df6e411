"""Where the tuning half's missed tools sit: rank in the whole request's ranking, best rank in any sentence."""
import sys, collections
sys.path.insert(0, "results/selection/session8")
from alloc import *
part = sys.argv[1] if len(sys.argv) > 1 else "tune"
c = collections.Counter()
for d in DATA:
    if d["split"] != part: continue
    got = baseline(d)
    f = d["whole"]["fused"]; order = list(np.argsort(-f, kind="stable"))
    for e in d["q"]["expected"]:
        j = NAMES.index(e)
        if j in got: continue
        r = order.index(j)
        sr = min([list(np.argsort(-s["fused"], kind="stable")).index(j) for s in d["sents"]] or [99])
        multi = len(d["q"]["expected"]) > 1
        c[(multi, min(r, 10))] += 1
        print(f'{d["q"]["id"]:24s} {e:35s} whole {r:3d} z {f[j]:.2f} (5th {f[order[4]]:.2f}) sent {sr} n_exp {len(d["q"]["expected"])}')
print(sorted(c.items()))
