"""Near-duplicate deferral: a candidate whose definition vector is within cosine t of an already chosen
tool's waits until the other candidates are placed (multi-task requests only, or all)."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def dedup(d, t=0.9, mode="multi", min_picks=2):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    cand = order[~(f[order] < THR)][:3 * K].tolist()
    seq = [i for i in dict.fromkeys(list(d["named"]) + lead + picks + cand)
           if i in d["named"] or i in lead or i in picks or f[i] >= THR]
    active = mode == "all" or len(set(picks)) >= min_picks
    chosen, deferred = [], []
    for i in seq:
        if len(chosen) >= K: break
        if active and i not in d["named"] and any(float(TV[i] @ TV[j]) >= t for j in chosen):
            deferred.append(i); continue
        chosen.append(i)
    for i in deferred:
        if len(chosen) >= K: break
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T))
    for mode in ("multi", "all"):
        for mp in (1, 2, 3):
            for t in (0.8, 0.85, 0.9, 0.95):
                if mode == "all" and mp > 1: continue
                print(mode, mp, t, score(dedup, T, t=t, mode=mode, min_picks=mp))
