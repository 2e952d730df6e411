"""Expected coverage: each task (the whole request, and each sentence whose best tool stands out) spreads a
probability over tools (softmax of its fused z / T); the k tools with the largest weighted sum are sent."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def softmax(x, T):
    e = np.exp((x - x.max()) / T); return e / e.sum()

def alloc(d, T=1.0, W=2.0, segz=SEGZ, soft=False, Ts=None):
    f = d["whole"]["fused"]
    total = W * softmax(f, T)
    for s in d["sents"]:
        sz = s["fused"]; best = int(np.argmax(sz)); vz = float(zscore(s["vec"])[best])
        if soft:
            w = 1 / (1 + np.exp(-(min(vz, sz[best]) - segz)))
        else:
            w = float(vz >= segz and sz[best] >= segz)
        if w > 0: total = total + w * softmax(sz, Ts or T)
    order = np.argsort(-total, kind="stable")
    chosen = list(d["named"])
    for i in order[:3 * K]:
        if len(chosen) >= K: break
        if int(i) not in chosen: chosen.append(int(i))
    return chosen

if __name__ == "__main__":
    P = ("tune",)
    print("base", score(baseline, P))
    for T in (0.5, 1.0, 1.5, 2.0):
        for W in (1.0, 2.0, 3.0, 5.0):
            for soft in (False, True):
                print("T", T, "W", W, "soft", soft, score(alloc, P, T=T, W=W, soft=soft))
