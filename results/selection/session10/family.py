"""Toolkit coherence: the tools one request needs tend to come from one toolkit, and a toolkit names its
tools alike (a namespace, `lawsuit.judge` / `lawsuit.fetch_details`; a shared shape, `hotel_room_pricing.get`
/ `car_rental_pricing.get`). Read off the misses (read_misses.py: #19, #21, #23, #25, #28, #30): the place
goes to a near-duplicate from another toolkit. After select's lead (its first LEAD tools) and the
sentences' picks are known, every other tool of the same family gets + w to its fused score, then select's
allocation runs as before. Families:
  ns     the name before its last '.' (`lawsuit` of `lawsuit.judge`); names without '.' have none
  leaf   the segment after the last '.' (`get` of `car_rental_pricing.get`)
  either ns or leaf
  words  Jaccard of the name's words >= j (name words as select splits them), bonus w x Jaccard
  nsw    ns, and the bonus only for tools already in the first N of the ranking
Run from the worktree root: nice -n 15 .venv/bin/python results/selection/session10/family.py [tune|both]"""
import sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
import alloc
from alloc import DATA, NAMES, score, baseline, picks_of, LEAD
from edgeindex.selection.text import split_identifier

PARTS = ("tune", "held_out") if sys.argv[1:2] == ["both"] else ("tune",)
NS = [n.rsplit(".", 1)[0].lower() if "." in n else None for n in NAMES]
LEAF = [n.rsplit(".", 1)[1].lower() if "." in n else None for n in NAMES]
WORDS = [frozenset(split_identifier(n)) for n in NAMES]

def boosted(d, kind, w, n=None, j=0.5, anchors="lead+picks"):
    f = d["whole"]["fused"].copy()
    order = np.argsort(-f, kind="stable")
    anchor = [int(i) for i in order[:LEAD]]
    if anchors == "lead+picks":
        anchor += picks_of(d["sents"])
    anchor += list(d["named"])
    anchor = list(dict.fromkeys(anchor))
    pool = order[:n] if n else order
    for i in pool:
        i = int(i)
        if i in anchor: continue
        bonus = 0.0
        for a in anchor:
            if kind in ("ns", "either") and NS[i] and NS[i] == NS[a]: bonus = max(bonus, w)
            if kind in ("leaf", "either") and LEAF[i] and LEAF[i] == LEAF[a]: bonus = max(bonus, w)
            if kind == "words":
                jac = len(WORDS[i] & WORDS[a]) / len(WORDS[i] | WORDS[a])
                if jac >= j: bonus = max(bonus, w * jac)
        f[i] += bonus
    return f

def variant(label, **kw):
    alloc.DATA = [dict(d, whole=dict(d["whole"], fused=boosted(d, **kw))) for d in DATA]
    r = score(baseline, parts=PARTS)
    alloc.DATA = DATA
    print(f"{label:45s} {r}", flush=True)
    return r

if __name__ == "__main__":
    variant("w 0 (= select)", kind="ns", w=0.0)
    for kind in ("ns", "leaf", "either"):
        for w in (0.25, 0.5, 1.0, 2.0):
            variant(f"{kind} w {w}", kind=kind, w=w)
    for w in (0.5, 1.0):
        for n in (10, 15):
            variant(f"ns w {w}, first {n} only", kind="ns", w=w, n=n)
        variant(f"ns w {w}, lead only (no picks)", kind="ns", w=w, anchors="lead")
    for j in (0.3, 0.5):
        for w in (0.5, 1.0, 2.0):
            variant(f"words j {j} w {w}", kind="words", w=w, j=j)
