"""Ordering of the sentences' picks: by the pick's own vector z (select now), by its whole-request z, or mixed;
and a pick's floor on its whole-request z."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def picks2(d, beta=0.0, floor=-99, segz=SEGZ, key="vz"):
    f = d["whole"]["fused"]; out = {}
    for s in d["sents"]:
        sz = s["fused"]; best = int(np.argmax(sz)); vz = float(zscore(s["vec"])[best])
        if vz >= segz and sz[best] >= segz and f[best] >= floor:
            pr = {"vz": vz, "fz": float(sz[best]), "margin": float(sz[best] - np.partition(sz, -2)[-2])}[key] + beta * float(f[best])
            out[best] = max(out.get(best, -1e9), pr)
    return [i for i in sorted(out, key=lambda i: -out[i])]

def alloc(d, beta=0.0, floor=-99, lead=LEAD, key="vz", segz=SEGZ):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks2(d, beta, floor, segz, key)
    leads = [int(i) for i in order[:lead]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(leads + picks + cand):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in leads and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T), score(alloc, T))
    for key in ("vz", "fz", "margin"):
        for beta in (0, 0.25, 0.5, 1.0, 2.0, 10.0):
            print(key, "beta", beta, score(alloc, T, beta=beta, key=key))
    for floor in (0, 1, 1.5, 2, 2.5, 3):
        print("floor", floor, score(alloc, T, floor=floor))
    for segz in (2.5, 3.5, 4, 5):
        print("segz", segz, score(alloc, T, segz=segz))
