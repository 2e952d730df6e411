"""The whole request's second lead place given up to the sentences' picks when they are many, or when it is a
near-duplicate of the first."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def alloc(d, m=99, t=2.0, both=False):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    distinct = [p for p in dict.fromkeys(picks) if p not in lead]
    dup = float(TV[lead[0]] @ TV[lead[1]]) >= t
    cond = (len(distinct) >= m and dup) if both else (len(distinct) >= m or (dup and distinct))
    if cond: lead = lead[:1]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + cand):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in lead and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T))
    for m in (2, 3, 4, 5):
        print("m", m, score(alloc, T, m=m))
    for t in (0.7, 0.8, 0.85, 0.9, 0.95):
        print("t", t, score(alloc, T, t=t))
    for m in (2, 3, 4):
        for t in (0.7, 0.8, 0.9):
            print("both m", m, "t", t, score(alloc, T, m=m, t=t, both=True))
