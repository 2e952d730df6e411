"""The sentences' own blend weight (vector vs BM25) apart from the whole request's 0.6."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def alloc(d, a=0.6, wa=0.6):
    def re(s, al):
        return {**s, "fused": (al * zscore(s["vec"]) + (1 - al) * zscore(s["bm25"])).astype(np.float32)}
    return baseline({**d, "whole": re(d["whole"], wa) if wa != 0.6 else d["whole"], "sents": [re(s, a) for s in d["sents"]]})

if __name__ == "__main__":
    P = ("tune",)
    print("base", score(baseline, P), score(alloc, P))
    for a in (0.4, 0.5, 0.7, 0.8, 0.9):
        print("sentence alpha", a, score(alloc, P, a=a))
