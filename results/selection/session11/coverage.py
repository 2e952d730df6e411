"""Coverage-aware allocation of the k places (greedy, MMR-like) over precomputed scores.

Tasks: the request's segments (sentences as select embeds them; or clauses) whose best tool stands out
(vector z and fused z >= segz, select's pick rule). A tool answers task t by a_t(i) = clip(1 - (best_t -
s_t(i)) / m, 0, 1) (1 for the task's best, 0 for a tool m z below it). Greedy: after the named tools and
`lead` tools of the whole request, each place goes to the candidate with the largest
    f(i) + beta * sum_t max(0, a_t(i) - covered_t) - gamma * max_{j chosen} cos(i, j)
where covered_t is the best a_t of the chosen tools: a task's first tool gains beta, its second only what
it adds over the first (the redundancy between tools that answer the same clause). Candidates: the whole
request's first `pool` tools not under the threshold, and every task's tools with a_t > 0."""
import itertools, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *

def tasks_of(segs, segz=SEGZ):
    out = []
    for s in segs:
        best = int(np.argmax(s["fused"]))
        if float(zscore(s["vec"])[best]) >= segz and s["fused"][best] >= segz:
            out.append(s["fused"])
    return out

def cover(d, segs="sents", lead=1, beta=2.0, m=1.0, gamma=0.0, pool=10, segz=SEGZ, cap_best=None):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    T = tasks_of(d[segs], segz)
    chosen = list(d["named"])
    for i in order[:lead]:
        if len(chosen) < K and int(i) not in chosen: chosen.append(int(i))
    A = np.zeros((len(T), len(f)), np.float32)
    for t, s in enumerate(T):
        A[t] = np.clip(1 - (s.max() - s) / m, 0, 1)
    cand = set(order[~(f[order] < THR)][:pool].tolist()) | set(np.flatnonzero(A.max(0) > 0).tolist()) if len(T) else set(order[~(f[order] < THR)][:pool].tolist())
    cand -= set(chosen)
    while len(chosen) < K and cand:
        covered = A[:, chosen].max(1) if len(T) and chosen else np.zeros(len(T), np.float32)
        best, bi = -1e9, None
        for i in cand:
            g = float(f[i])
            if len(T):
                g += beta * float(np.maximum(A[:, i] - covered, 0).sum())
            if gamma and chosen:
                g -= gamma * float(max(TV[i] @ TV[j] for j in chosen))
            if g > best: best, bi = g, i
        chosen.append(bi); cand.discard(bi)
    return chosen

if __name__ == "__main__":
    print("baseline", score(baseline))
    print("cover defaults", score(cover))
    rows = []
    for segs, lead, beta, m, gamma in itertools.product(["sents", "clauses"], [0, 1, 2], [0.5, 1, 2, 4], [0.5, 1, 2], [0, 1, 3]):
        r = score(cover, parts=("tune",), segs=segs, lead=lead, beta=beta, m=m, gamma=gamma)
        rows.append((r["tune"][2], -r["tune"][1], segs, lead, beta, m, gamma, r["tune"]))
    rows.sort(key=lambda r: r[:2])
    for r in rows[:25]: print(r[2:])
    print("worst", rows[-1][2:])
