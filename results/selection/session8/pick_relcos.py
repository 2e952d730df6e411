"""A sentence's pick must be as close to its sentence as r x the whole request's best cosine (filler sentences
such as "Can you help me plan my day?" pick something only weakly close)."""
import sys
sys.path.insert(0, "results/selection/session8")
from alloc import *

def alloc(d, r=0.0):
    top = float(d["whole"]["vec"].max())
    keep = [s for s in d["sents"] if float(s["vec"].max()) >= r * top]
    return baseline({**d, "sents": keep})

if __name__ == "__main__":
    P = ("tune",)
    print("base", score(baseline, P))
    for r in (0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0):
        print("r", r, score(alloc, P, r=r))
    # what the filler picks look like
    for d in DATA[:0]: pass
