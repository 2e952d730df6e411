"""Clause picks without a clause embedding (free at select time): a clause scored by the whole request's
vector z and its own BM25 z (alpha 0.6 as select), its best picked when its BM25 z and that fused z
both reach cz; placed after the sentences' picks, before the whole request's fill (as clause_picks.py)."""
import itertools, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *
from cap import fixed

def bm25_picks(d, cz, a):
    wv = zscore(d["whole"]["vec"])
    out = []
    for c in d["clauses"]:
        bz = zscore(c["bm25"])
        f = a * wv + (1 - a) * bz
        best = int(np.argmax(f))
        if bz[best] >= cz and f[best] >= cz:
            out.append((float(f[best]), best))
    return [i for _, i in sorted(out, key=lambda p: -p[0])]

def two_tier_free(d, cz=4.0, a=0.6):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + bm25_picks(d, cz, a)):
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    for i in order[~(f[order] < THR)][:K].tolist():
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    return chosen

if __name__ == "__main__":
    print("baseline", score(baseline))
    for cz, a in itertools.product([3.0, 4.0, 5.0, 6.0, 8.0], [0.3, 0.6]):
        print(cz, a, score(two_tier_free, parts=("tune",), cz=cz, a=a))
