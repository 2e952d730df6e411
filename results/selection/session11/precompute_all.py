"""Adds to /tmp/toolsq11-pre.pkl every sentence of every request (no MAX_SEGMENTS cap), scored like a
select's sentences, as d["allsents"]: to ask which sentences a capped select should embed."""
import asyncio, pickle, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from common import *
from edgeindex.selection.text import terms

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    P = pickle.load(open("/tmp/toolsq11-pre.pkl", "rb"))
    def sc(text, v):
        s = cat.catalogue.score(text, v)
        bm, best = cat.catalogue.bm25.scores(text)
        return {"vec": s.vector.astype(np.float32), "fused": s.fused.astype(np.float32), "text": text,
                "bm25": bm.astype(np.float32), "bm25_best": best, "qv": v.astype(np.float32)}
    for d in P["data"]:
        parts = [p.strip(" \"'") for p in tl._SENTENCE.split(d["q"]["query"])]
        parts = [p for p in parts if len(terms(p)) >= tl.SEGMENT_MIN_TERMS]
        parts = parts if len(parts) >= 2 else []
        d["allsents"] = [sc(s, await emb.embed_query(s)) for s in parts]
    emb.save()
    pickle.dump(P, open("/tmp/toolsq11-pre.pkl", "wb"))
    print(sum(len(d["allsents"]) for d in P["data"]), "sentences uncapped")
asyncio.run(main())
