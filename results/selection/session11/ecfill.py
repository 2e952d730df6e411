"""Select's lead and the sentences' picks kept; the places left go by expected coverage instead of the
whole request's order: W * softmax(f / T) + sum over tasks of softmax(s_t / T) (a task's hedge is worth
most where its first two are close), and the coverage greedy with larger beta."""
import itertools, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *
from coverage import cover, tasks_of

def sm(x, T):
    e = np.exp((x - x.max()) / T); return e / e.sum()

def ecfill(d, W=2.0, T=1.0, segz=SEGZ, segs="sents"):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d[segs], segz)
    lead = [int(i) for i in order[:LEAD]]
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks):
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    val = W * sm(f, T)
    for s in tasks_of(d[segs], segz):
        val = val + sm(s, T)
    val[f < THR] = -1
    for i in np.argsort(-val, kind="stable"):
        if len(chosen) >= K or val[i] < 0: break
        if int(i) not in chosen: chosen.append(int(i))
    return chosen

if __name__ == "__main__":
    print("baseline", score(baseline))
    rows = []
    for W, T in itertools.product([0.5, 1, 2, 4, 8], [0.25, 0.5, 1, 2]):
        r = score(ecfill, parts=("tune",), W=W, T=T)
        rows.append((r["tune"][2], -r["tune"][1], "ecfill", W, T, r["tune"]))
    for lead, beta, m in itertools.product([1, 2], [6, 8, 16], [0.5, 1, 2]):
        r = score(cover, parts=("tune",), lead=lead, beta=beta, m=m)
        rows.append((r["tune"][2], -r["tune"][1], "cover", lead, beta, m, r["tune"]))
    rows.sort(key=lambda r: r[:2])
    for r in rows[:15]: print(r[2:])
