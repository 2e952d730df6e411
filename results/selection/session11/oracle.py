"""Upper bounds (they read the labels; not rules): what select would recall if every sentence pick that is
not needed were dropped, and if the hedges (a chosen tool not needed) of tasks already covered were
dropped -- how much room the allocation of the five places has at all."""
import sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *
idx = {nm: i for i, nm in enumerate(NAMES)}

def no_bad_picks(d):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    exp = {idx[e] for e in d["q"]["expected"]}
    picks = [p for p in picks_of(d["sents"]) if p in exp]
    return baseline({**d, "sents": []}) if not picks else _with(d, picks)

def _with(d, picks):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    lead = [int(i) for i in order[:LEAD]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + cand):
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    return chosen

def top10_needed_first(d):
    """the needed tools among the first 10 of select's own order moved first: recall@5 if the order
    inside the first 10 were perfect"""
    exp = {idx[e] for e in d["q"]["expected"]}
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    ten = list(dict.fromkeys(baseline(d) + [int(i) for i in order[:10]]))[:10]
    return [i for i in ten if i in exp] + [i for i in ten if i not in exp]

print("baseline", score(baseline))
print("oracle: no unneeded sentence picks", score(no_bad_picks))
print("oracle: perfect order inside select's first 10", score(top10_needed_first))
