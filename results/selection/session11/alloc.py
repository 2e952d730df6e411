"""Slot allocation experiments over precomputed scores (precompute.py). baseline() re-implements select's
choice (lead 2, sentences' picks, then the whole ranking above the threshold)."""
import pickle, sys
import numpy as np
sys.path.insert(0, "results/selection/session11")
from edgeindex.selection.scoring import zscore

P = pickle.load(open("/tmp/toolsq11-pre.pkl", "rb"))
NAMES, DATA = P["names"], P["data"]
TV = P["tool_vecs"]
THR, SEGZ, LEAD, K = 1.5, 3.0, 2, 5

def picks_of(segs, segz=SEGZ):
    out = []
    for s in segs:
        best = int(np.argmax(s["fused"]))
        vz = float(zscore(s["vec"])[best])
        if vz >= segz and s["fused"][best] >= segz:
            out.append((vz, best))
    return [i for _, i in sorted(out, key=lambda p: -p[0])]

def baseline(d, segs="sents"):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d[segs])
    lead = [int(i) for i in order[:LEAD]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + cand):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in lead and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

def score(fn, parts=("tune", "held_out"), show=False, **kw):
    res = {}
    for part in parts:
        rec, alln, miss = [], [], 0
        for d in DATA:
            if d["split"] != part: continue
            got = [NAMES[i] for i in fn(d, **kw)][:K]
            exp = d["q"]["expected"]
            h = sum(e in got for e in exp)
            rec.append(h / len(exp)); alln.append(h == len(exp)); miss += len(exp) - h
        res[part] = (round(float(np.mean(rec)), 4), round(float(np.mean(alln)), 4), miss)
    return res

if __name__ == "__main__":
    print("baseline sentences", score(baseline))
