"""Span-pooled sentences (and clauses) in place of their own embeddings, with select's cuts re-swept:
the sentences' pick cut (SEGMENT_Z), and clause picks after them (cz; none = no clause picks). Tune
first; the held-out half printed for the tuning half's best three only."""
import asyncio, itertools, pickle, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from common import *
import alloc
from alloc import score, baseline, DATA, picks_of, THR, LEAD, K

SP = pickle.load(open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/toolsq11-spans.pkl", "rb"))

def alloc_span(d, segz=3.0, cz=None):
    f = d["whole"]["fused"]; order = np.argsort(-f, kind="stable")
    picks = picks_of(d["sents"], segz)
    if cz is not None:
        picks = picks + [p for p in picks_of(d["clauses"], cz) if p not in picks]
    lead = [int(i) for i in order[:LEAD]]
    cand = order[~(f[order] < THR)][:K].tolist()
    chosen = list(d["named"])
    for i in dict.fromkeys(lead + picks + cand):
        if len(chosen) >= K: break
        if i in chosen: continue
        if i not in lead and i not in picks and f[i] < THR: continue
        chosen.append(i)
    return chosen

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    def sc(s, v):
        if v is None: return s
        x = cat.catalogue.score(s["text"], v); return {"vec": x.vector, "fused": x.fused, "text": s["text"]}
    own = list(DATA)
    span = [dict(d, sents=[sc(s, v) for s, v in zip(d["sents"], SP[d["q"]["query"]]["sents"])],
                 clauses=[sc(s, v) for s, v in zip(d["clauses"], SP[d["q"]["query"]]["clauses"])]) for d in own]
    print("own sentence embeddings (select today)", score(baseline))
    alloc.DATA[:] = span
    rows = []
    for segz, cz in itertools.product([2.5, 3.0, 3.5, 4.0, 4.5], [None, 3.0, 4.0, 5.0, 6.0]):
        r = score(alloc_span, parts=("tune",), segz=segz, cz=cz)
        rows.append((r["tune"][2], -r["tune"][1], segz, cz))
        print("span sentences segz", segz, "clauses cz", cz, r, flush=True)
    rows.sort(key=lambda r: r[:2])
    for _, _, segz, cz in rows[:3]:
        print("BEST3 segz", segz, "cz", cz, score(alloc_span, segz=segz, cz=cz))
if __name__ == "__main__":
    asyncio.run(main())
