"""Non-linear blends of the whole request's vector and BM25 scores (sentences' picks and allocation as select's)."""
import sys
sys.path.insert(0, "results/selection/session8")
import alloc as A
from alloc import *

def make(d, vt, bt, alpha):
    w = d["whole"]; v = w["vec"]; b = w["bm25"]
    vv = {"lin": v, "exp10": np.exp(v * 10), "exp20": np.exp(v * 20), "main": w["main"],
          "mix": 0.5 * (v + w["main"])}[vt]
    bb = {"lin": b, "sqrt": np.sqrt(b), "log": np.log1p(b), "sq": b ** 2}[bt]
    return alpha * zscore(vv) + (1 - alpha) * zscore(bb)

def blended(d, vt="lin", bt="lin", alpha=0.6):
    f0 = d["whole"]["fused"]
    f = make(d, vt, bt, alpha)
    order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + order[:3 * K].tolist()):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in lead and i not in picks and f0[i] < THR: continue
        chosen.append(int(i))
    return chosen

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T), score(blended, T))
    for vt in ("lin", "exp10", "exp20", "main", "mix"):
        for bt in ("lin", "sqrt", "log", "sq"):
            for alpha in (0.5, 0.6, 0.7):
                print(vt, bt, alpha, score(blended, T, vt=vt, bt=bt, alpha=alpha))
