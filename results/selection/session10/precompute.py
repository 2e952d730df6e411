"""Session 8's precompute (same catalogue.score as select) plus the raw vectors: the request's and each
sentence's query vector, every tool's definition and description vector. Lets a variant change the vector
space (centering, principal components removed) without the model. Writes /tmp/toolsq10-pre.pkl."""
import asyncio, pickle, sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
from common import *

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    names = [r["name"] for r in cat.rows]
    order = {d.name: i for i, d in enumerate(defs)}
    dvecs = await emb.embed([d.description or d.name for d in defs])
    dvecs = dvecs[[order[n] for n in names]]
    has_desc = np.array([bool(defs[order[n]].description) for n in names])
    def sc(text, v):
        s = cat.catalogue.score(text, v)
        bm, best = cat.catalogue.bm25.scores(text)
        return {"vec": s.vector.astype(np.float32), "fused": s.fused.astype(np.float32), "text": text,
                "bm25": bm.astype(np.float32), "qv": v.astype(np.float32)}
    data = []
    for q in queries:
        qv = await emb.embed_query(q["query"])
        sents = tl.segments(q["query"])
        sents = sents if len(sents) >= 2 else []
        sv = [await emb.embed_query(s) for s in sents]
        data.append({"q": q, "split": split_of(q["id"]), "whole": sc(q["query"], qv),
                     "sents": [sc(s, v) for s, v in zip(sents, sv)], "named": tl.named_tools(q["query"], cat)})
    emb.save()
    pickle.dump({"names": names, "data": data, "tool_vecs": cat.catalogue.vectors, "desc_vecs": dvecs, "has_desc": has_desc,
                 "defs": {d.name: d for d in defs}}, open("/tmp/toolsq10-pre.pkl", "wb"))
    print(sum(len(d["sents"]) for d in data), "sentences")
asyncio.run(main())
