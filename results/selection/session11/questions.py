"""Asking sentences carry the task, telling ones its values ("A player has a 60% chance ... What is the
probability that he makes exactly 7?"). Variants: in a request that has a question sentence (ends in ?),
the telling sentences' picks are dropped (drop) or come after the asking ones' (order); and the fill's
ranking is the asking sentences' text only, scored whole (not available offline: approximated by the
mean of their fused z with the whole request's)."""
import sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *

def asks(s): return s["text"].rstrip(" \"'").endswith("?")

def qpicks(d, how="drop", lam=0.5):
    segs = d["sents"]
    q = [s for s in segs if asks(s)]
    if not q or len(q) == len(segs):
        return baseline(d)
    if how == "drop":
        return baseline({**d, "sents": q})
    if how == "order":
        picks = picks_of(q) + [p for p in picks_of([s for s in segs if not asks(s)]) if p not in picks_of(q)]
        f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
        lead = [int(i) for i in order[:LEAD]]
        cand = order[~(f[order] < THR)][:K].tolist()
        chosen = list(d["named"])
        for i in dict.fromkeys(lead + picks + cand):
            if len(chosen) >= K: break
            if i in chosen: continue
            if i not in lead and i not in picks and f[i] < THR: continue
            chosen.append(i)
        return chosen
    if how == "fill":
        f = d["whole"]["fused"] + lam * np.mean([s["fused"] for s in q], axis=0)
        return baseline({**d, "whole": {**d["whole"], "fused": f / (1 + lam)}})

if __name__ == "__main__":
    print("baseline", score(baseline))
    n = sum(1 for d in DATA if any(asks(s) for s in d["sents"]) and not all(asks(s) for s in d["sents"]))
    print("requests with asking and telling sentences:", n)
    print("drop", score(qpicks, how="drop"))
    print("order", score(qpicks, how="order"))
    for lam in (0.25, 0.5, 1.0):
        print("fill", lam, score(qpicks, how="fill", lam=lam))
