"""Scores the span vectors (spans.py) through the real catalogue.score: select's allocation with the
sentences' own embeddings replaced by span vectors, and clause picks (clause_picks.py) from span vectors."""
import asyncio, pickle, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from common import *
import alloc
from alloc import score, baseline, DATA
from clause_picks import two_tier

SP = pickle.load(open("/tmp/toolsq11-spans.pkl", "rb"))

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    def sc(text, v):
        s = cat.catalogue.score(text, v)
        return {"vec": s.vector, "fused": s.fused, "text": text}
    new = []
    for d in DATA:
        r = SP[d["q"]["query"]]
        sents = [sc(s["text"], v) if v is not None else s for s, v in zip(d["sents"], r["sents"])]
        clauses = [sc(s["text"], v) if v is not None else s for s, v in zip(d["clauses"], r["clauses"])]
        new.append(dict(d, sents=sents, clauses=clauses))
    print("select (own sentence embeddings)", score(baseline))
    print("clause picks, own clause embeddings, cz 4", score(two_tier, cz=4.0))
    alloc.DATA[:] = new
    print("select, sentences as spans", score(baseline))
    print("select without sentences", score(lambda d: baseline(dict(d, sents=[]))))
    for cz in (3.0, 4.0, 5.0):
        print("span sentences + span clause picks, cz", cz, score(two_tier, cz=cz))
if not sys.argv[1:]:
    asyncio.run(main())

async def mixed():
    """today's sentence embeddings, clause picks from span vectors (free)"""
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    new = []
    for d in DATA:
        r = SP[d["q"]["query"]]
        clauses = []
        for s, v in zip(d["clauses"], r["clauses"]):
            if v is not None:
                x = cat.catalogue.score(s["text"], v); s = {"vec": x.vector, "fused": x.fused, "text": s["text"]}
            clauses.append(s)
        new.append(dict(d, clauses=clauses))
    alloc.DATA[:] = new
    for cz in (3.0, 3.5, 4.0, 5.0, 6.0):
        print("own sentences + span clause picks, cz", cz, score(two_tier, cz=cz))
if sys.argv[1:] == ["mixed"]:
    asyncio.run(mixed())

async def which():
    """the requests that cz 4 span clause picks change, with the clause that picked"""
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    from alloc import NAMES, picks_of
    for d in DATA:
        r = SP[d["q"]["query"]]
        clauses = []
        for s, v in zip(d["clauses"], r["clauses"]):
            if v is not None:
                x = cat.catalogue.score(s["text"], v); s = {"vec": x.vector, "fused": x.fused, "text": s["text"]}
            clauses.append(s)
        d2 = dict(d, clauses=clauses)
        a = [NAMES[i] for i in baseline(d)][:5]; b = [NAMES[i] for i in two_tier(d2, cz=4.0)][:5]
        e = d["q"]["expected"]
        ha, hb = sum(x in a for x in e), sum(x in b for x in e)
        if ha != hb:
            print(d["split"], d["q"]["id"], f"{ha} -> {hb} of {len(e)}", "| in:", [x for x in b if x not in a], "out:", [x for x in a if x not in b])
            print("    ", d["q"]["query"][:160])
if sys.argv[1:] == ["which"]:
    asyncio.run(which())
