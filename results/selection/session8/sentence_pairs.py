"""Adjacent sentences scored together (the mean of their z-scores, no new embedding): a task told over two
sentences ("... build a circular garden." "The radius of the garden will be 5 meters.") gets a pick too."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def pair_segs(d, width=2):
    s = d["sents"]; out = []
    for a in range(len(s) - width + 1):
        grp = s[a:a + width]
        out.append({"fused": np.mean([g["fused"] for g in grp], axis=0), "vecz": np.mean([zscore(g["vec"]) for g in grp], axis=0)})
    return out

def picks_pairs(d, segz, width, pairz):
    out = []
    for s in d["sents"]:
        best = int(np.argmax(s["fused"])); vz = float(zscore(s["vec"])[best])
        if vz >= segz and s["fused"][best] >= segz: out.append((vz, best, 0))
    for p in pair_segs(d, width):
        best = int(np.argmax(p["fused"])); vz = float(p["vecz"][best])
        if vz >= pairz and p["fused"][best] >= pairz: out.append((vz, best, 1))
    return out

def alloc(d, segz=SEGZ, width=2, pairz=3.0, mode="merge"):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    pp = picks_pairs(d, segz, width, pairz)
    if mode == "merge": picks = [i for _, i, _ in sorted(pp, key=lambda p: -p[0])]
    else: picks = [i for _, i, _ in sorted([p for p in pp if p[2] == 0], key=lambda p: -p[0])] + [i for _, i, _ in sorted([p for p in pp if p[2] == 1], key=lambda p: -p[0])]
    lead = [int(i) for i in order[:LEAD]]
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
    for mode in ("merge", "after"):
        for width in (2, 3):
            for pairz in (2.5, 3.0, 3.5, 4.0, 5.0):
                print(mode, width, pairz, score(alloc, T, width=width, pairz=pairz, mode=mode))
