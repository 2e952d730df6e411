"""Clauses as a second tier of picks: the sentences' picks as select makes them, then the picks of the
clauses (", and", "then", "also", "as well as" inside a sentence; precompute.py) whose best stands out by
cz, placed before the whole request's fill; optionally only a clause pick that is not within cosine t of
a tool already chosen (a new task, not a hedge of a covered one). Clause embeddings cost model time."""
import itertools, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *

def two_tier(d, cz=4.0, t=1.01):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"])
    lead = [int(i) for i in order[:LEAD]]
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks):
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    for i in picks_of(d["clauses"], cz):
        if len(chosen) >= K: break
        if i in chosen or (chosen and max(float(TV[i] @ TV[j]) for j in chosen) >= t): continue
        chosen.append(i)
    for i in order[~(f[order] < THR)][:K].tolist():
        if len(chosen) >= K: break
        if i not in chosen: chosen.append(i)
    return chosen

if __name__ == "__main__":
    print("baseline", score(baseline))
    for cz, t in itertools.product([3.0, 3.5, 4.0, 5.0, 6.0], [1.01, 0.9, 0.8, 0.7]):
        print(cz, t, score(two_tier, parts=("tune",), cz=cz, t=t))
