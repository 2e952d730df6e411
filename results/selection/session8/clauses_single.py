"""Clauses (", then", ", and", "and also", ...; precompute.CLAUSE) as segments only for one-sentence requests,
with their own pick cut."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def alloc(d, cz=3.0, lead=LEAD):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"]) if d["sents"] else picks_of(d["clauses"], cz)
    leads = [int(i) for i in order[:lead]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(leads + picks + cand):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in leads and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

if __name__ == "__main__":
    P = ("tune",)
    print("base", score(baseline, P))
    n = sum(1 for d in DATA if d["split"] == "tune" and not d["sents"] and d["clauses"])
    print("one-sentence requests with clauses (tune):", n)
    for cz in (3.0, 3.5, 4.0, 5.0, 6.0):
        for lead in (1, 2, 3):
            print("cz", cz, "lead", lead, score(alloc, P, cz=cz, lead=lead))
