"""Where today's misses stand: requests with more than MAX_SEGMENTS sentences, and missed tools that a
sentence or a clause ranks first (or in its first 3)."""
import sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from alloc import *
from edgeindex.selection import tools as tl
from edgeindex.selection.text import terms
idx = {nm: i for i, nm in enumerate(NAMES)}
for part in ("tune", "held_out"):
    over = 0; c = {"sent1": 0, "sent3": 0, "clause1": 0, "clause3": 0, "none": 0, "total": 0}
    for d in DATA:
        if d["split"] != part: continue
        q = d["q"]["query"]
        allseg = [p.strip(" \"'") for p in tl._SENTENCE.split(q)]
        allseg = [p for p in allseg if len(terms(p)) >= tl.SEGMENT_MIN_TERMS]
        if len(allseg) > tl.MAX_SEGMENTS: over += 1
        got = [NAMES[i] for i in baseline(d)][:K]
        for m in d["q"]["expected"]:
            if m in got: continue
            c["total"] += 1
            j = idx[m]
            def rk(segs): return min([int((s["fused"] > s["fused"][j]).sum()) + 1 for s in segs] or [999])
            rs, rc = rk(d["sents"]), rk(d["clauses"])
            if rs == 1: c["sent1"] += 1
            elif rc == 1: c["clause1"] += 1
            elif rs <= 3: c["sent3"] += 1
            elif rc <= 3: c["clause3"] += 1
            else: c["none"] += 1
    print(part, "requests over the segment cap:", over, "| missed tools:", c)
