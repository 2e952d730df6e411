"""Sentences' picks that are near-duplicates (definition cosine >= t) of a tool already chosen wait until the
other sentences' picks are placed (a task told over several sentences gives several picks of the same kind)."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def alloc(d, t=0.8, where="picks_end"):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"]) + [i for i in lead if i not in d["named"]]
    chosen = chosen[:K]
    late = []
    for i in dict.fromkeys(picks):
        if i in chosen: continue
        if any(float(TV[i] @ TV[j]) >= t for j in chosen): late.append(i); continue
        if len(chosen) < K: chosen.append(i)
    rest = late + cand if where == "picks_end" else cand + late
    for i in dict.fromkeys(rest):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in late and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T))
    for where in ("picks_end", "after_whole"):
        for t in (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.01):
            print(where, t, score(alloc, T, t=t, where=where))
