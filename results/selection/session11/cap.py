"""The MAX_SEGMENTS cap (8): select embeds a long request's first 8 sentences, so a task told in the
9th or later gets no pick. Upper bound: every sentence (more embedding); free variants: which 8 are
embedded, chosen by each sentence's BM25 alone (no model): the 8 whose best BM25 share is largest."""
import sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *
from coverage import cover

def capped(d, how="first", cap=8):
    segs = d["allsents"]
    if len(segs) > cap:
        if how == "bm25":   # the sentence's best tool's BM25 as a share of what its terms could score
            key = [-(float(s["bm25"].max()) / s["bm25_best"] if s["bm25_best"] else 0.0) for s in segs]
            keep = sorted(np.argsort(key, kind="stable")[:cap])
        elif how == "bm25z":
            key = [-float(zscore(s["bm25"]).max()) for s in segs]
            keep = sorted(np.argsort(key, kind="stable")[:cap])
        elif how == "last":
            keep = range(len(segs) - cap, len(segs))
        else:
            keep = range(cap)
        segs = [segs[i] for i in keep]
    return baseline({**d, "sents": segs})

if __name__ == "__main__":
    print("baseline (sents as pickled)", score(baseline))
    for how, cap in [("first", 8), ("first", 10), ("first", 12), ("first", 99), ("bm25", 8), ("bm25z", 8), ("last", 8)]:
        print(how, cap, score(capped, how=how, cap=cap))

from edgeindex.selection.text import terms
def capped_free(d, how="terms", cap=8):
    """catalogue-free choices (select embeds before it has read the catalogue)"""
    segs = d["allsents"]
    if len(segs) > cap:
        if how == "terms":      # the 8 with the most content words (filler sentences are short)
            key = [-len(set(terms(s["text"]))) for s in segs]
            keep = sorted(np.argsort(key, kind="stable")[:cap])
        elif how == "ends":     # first half and last half
            keep = list(range(cap // 2)) + list(range(len(segs) - cap + cap // 2, len(segs)))
        segs = [segs[i] for i in keep]
    return baseline({**d, "sents": segs})

def fixed(fn, **kw):
    idx = {nm: i for i, nm in enumerate(NAMES)}
    for d in DATA:
        a = [NAMES[i] for i in baseline(d)][:K]; b = [NAMES[i] for i in fn(d, **kw)][:K]
        e = d["q"]["expected"]
        if sum(x in a for x in e) != sum(x in b for x in e):
            print("  ", d["split"], d["q"]["id"], len(d["allsents"]), "sentences:", sum(x in a for x in e), "->", sum(x in b for x in e), "of", len(e))

if __name__ == "__main__":
    for how in ("terms", "ends"):
        print("free", how, score(capped_free, how=how))
        fixed(capped_free, how=how)
    print("bm25 8"); fixed(capped, how="bm25")
