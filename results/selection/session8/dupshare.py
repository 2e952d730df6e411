"""Tuning-half misses: is a chosen tool a near-duplicate (definition cosine) of the missed one?"""
import sys, collections
sys.path.insert(0, "results/selection/session8")
from alloc import *
c = collections.Counter()
part = sys.argv[1] if len(sys.argv) > 1 else "tune"
for d in DATA:
    if d["split"] != part: continue
    got = baseline(d)
    for e in d["q"]["expected"]:
        j = NAMES.index(e)
        if j in got: continue
        best = max(float(TV[j] @ TV[i]) for i in got)
        c["dup>=0.8" if best >= 0.8 else "dup 0.7-0.8" if best >= 0.7 else "uncovered"] += 1
        if best < 0.8: print(d["q"]["id"], e, round(best, 2), len(d["q"]["expected"]))
print(c)
