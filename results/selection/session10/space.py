"""The vector space itself as the signal: the tools' and requests' vectors centred on the catalogue's mean
and with its top principal directions removed ("all-but-the-top"), or each tool's cosine corrected for
how crowded its neighbourhood is (CSLS hubness correction). Only the cosines change; BM25, the blend
(0.6 / 0.4), the allocation (alloc.baseline) are select's. Run from the worktree root:
  nice -n 15 .venv/bin/python results/selection/session10/space.py"""
import sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
import alloc
from alloc import DATA, P, score, baseline
from edgeindex.selection.scoring import zscore

T, D, HAS = P["tool_vecs"].astype(np.float64), P["desc_vecs"].astype(np.float64), P["has_desc"]

def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)

def views(T, D, qv):
    v = T @ qv
    dv = D @ qv
    return np.where(HAS, np.maximum(v, dv), v)

def rescore(transform, alpha=0.6, extra=None):
    Tt, Dt, qf = transform
    out = []
    for d in DATA:
        nd = dict(d)
        for key in ("whole",):
            s = d[key]
            v = views(Tt, Dt, qf(s["qv"]))
            if extra is not None: v = v - extra
            nd[key] = dict(s, vec=v, fused=alpha * zscore(v) + (1 - alpha) * zscore(s["bm25"]))
        segs = []
        for s in d["sents"]:
            v = views(Tt, Dt, qf(s["qv"]))
            if extra is not None: v = v - extra
            segs.append(dict(s, vec=v, fused=alpha * zscore(v) + (1 - alpha) * zscore(s["bm25"])))
        nd["sents"] = segs
        out.append(nd)
    return out

def run(label, data, parts=("tune",)):
    alloc.DATA = data   # score() reads the module's DATA
    r = score(baseline, parts=parts)
    print(f"{label:40s} {r}", flush=True)
    return r

ident = (T, D, lambda q: q.astype(np.float64))
run("identity (= select)", rescore(ident), parts=("tune", "held_out"))
ALL = np.vstack([T, D[HAS]])
for center_on in ("tools", "tools+desc"):
    M = T if center_on == "tools" else ALL
    mu = M.mean(0)
    _, _, vt = np.linalg.svd(M - mu, full_matrices=False)
    for k in (0, 1, 2, 3, 5, 8, 12):
        U = vt[:k]
        def f(x, mu=mu, U=U):
            x = x - mu
            if len(U): x = x - (x @ U.T) @ U
            return unit(x)
        run(f"centre on {center_on}, top {k} removed", rescore((f(T), f(D), f)))
        # the request centred too but not the top removed from it is a different variant: skipped
# CSLS: a tool's cosine minus beta x the mean cosine to its K nearest other tools
S = T @ T.T
np.fill_diagonal(S, -1)
for K in (5, 10, 20):
    r = np.sort(S, axis=1)[:, -K:].mean(1)
    for beta in (0.25, 0.5, 1.0):
        run(f"CSLS K {K} beta {beta}", rescore(ident, extra=beta * r))
