"""Round-robin over task segments and RRF of per-segment rankings (tuning half first)."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def tasks(d, segs, segz):
    """Task segments: those whose best tool stands out; several segments with the same best are one task."""
    out = {}
    for s in d[segs]:
        f = s["fused"]; best = int(np.argmax(f)); vz = float(zscore(s["vec"])[best])
        if vz >= segz and f[best] >= segz:
            if best not in out or out[best][0] < vz:
                out[best] = (vz, s)
    return [s for _, s in sorted(out.values(), key=lambda p: -p[0])]

def roundrobin(d, segs="sents", segz=SEGZ, lead=LEAD, rounds=2, thr2=THR):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    chosen = list(d["named"])
    def add(i):
        if len(chosen) < K and i not in chosen: chosen.append(i)
    for i in order[:lead]: add(int(i))
    ts = tasks(d, segs, segz)
    ranks = [np.argsort(-s["fused"], kind="stable") for s in ts]
    for r in range(rounds):
        for s, o in zip(ts, ranks):
            i = int(o[r])
            if r == 0 or s["fused"][i] >= thr2: add(i)
    for i in order:
        if f[i] < THR: break
        add(int(i))
    return chosen

def rrf(d, segs="sents", segz=SEGZ, c=10, ww=2.0, depth=20):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    sc = {}
    for r, i in enumerate(order[:depth]):
        if f[i] >= THR or r < LEAD: sc[int(i)] = sc.get(int(i), 0) + ww / (c + r)
    ts = tasks(d, segs, segz)
    for s in ts:
        o = np.argsort(-s["fused"], kind="stable")
        for r, i in enumerate(o[:depth]):
            if s["fused"][i] >= THR or r == 0: sc[int(i)] = sc.get(int(i), 0) + 1 / (c + r)
    chosen = list(d["named"])
    for i in sorted(sc, key=lambda i: -sc[i]):
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T))
    for segs in ("sents", "clauses"):
        for lead in (1, 2):
            for rounds in (1, 2, 3):
                for thr2 in (THR, 3.0):
                    print(segs, "rr lead", lead, "rounds", rounds, "thr2", thr2, score(roundrobin, T, segs=segs, lead=lead, rounds=rounds, thr2=thr2))
        for c in (1, 5, 20, 60):
            for ww in (1.0, 2.0, 4.0):
                print(segs, "rrf c", c, "ww", ww, score(rrf, T, segs=segs, c=c, ww=ww))
