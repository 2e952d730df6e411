"""Session 10's precompute on today's code (the name's leaf in BM25), plus clauses: every request's
sentences (tools.segments, as select) and the clauses inside each sentence (CLAUSE below), each scored
by the real catalogue.score with its own embedding, and its BM25 alone. Writes /tmp/toolsq11-pre.pkl."""
import asyncio, pickle, re, sys
sys.path.insert(0, "results/selection/session11")
import numpy as np
from common import *
from edgeindex.selection.text import terms

# session 8's clause boundaries, and a wider one (any ", and" / " and " / ", then" / "also" / "as well as")
CLAUSE = re.compile(r",?\s+(?:and\s+)?then\s+|,?\s+and\s+also\s+|,\s+and\s+|,\s*also,?\s+|\s+as\s+well\s+as\s+|,\s+plus\s+|\s+and\s+(?=(?:find|get|calculate|tell|give|show|check|book|convert|compute|fetch|search|look|list|predict|determine|estimate|what|how|which|who|when|where)\b)", re.I)

def clauses(sentence):
    return [c.strip(" ,\"'") for c in CLAUSE.split(sentence)]

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    names = [r["name"] for r in cat.rows]
    def sc(text, v):
        s = cat.catalogue.score(text, v)
        bm, best = cat.catalogue.bm25.scores(text)
        return {"vec": s.vector.astype(np.float32), "fused": s.fused.astype(np.float32), "text": text,
                "bm25": bm.astype(np.float32), "bm25_best": best, "qv": v.astype(np.float32)}
    data = []
    for q in queries:
        qv = await emb.embed_query(q["query"])
        sents = tl.segments(q["query"])
        sents = sents if len(sents) >= 2 else []
        sv = [await emb.embed_query(s) for s in sents]
        raw_sents = [p.strip(" \"'") for p in tl._SENTENCE.split(q["query"])]
        cl = [c for s in raw_sents for c in clauses(s) if len(terms(c)) >= tl.SEGMENT_MIN_TERMS]
        cl = cl if len(cl) >= 2 else []
        cv = [await emb.embed_query(c) for c in cl]
        data.append({"q": q, "split": split_of(q["id"]), "whole": sc(q["query"], qv),
                     "sents": [sc(s, v) for s, v in zip(sents, sv)], "clauses": [sc(c, v) for c, v in zip(cl, cv)],
                     "named": tl.named_tools(q["query"], cat)})
    emb.save()
    pickle.dump({"names": names, "data": data, "tool_vecs": cat.catalogue.vectors, "defs": {d.name: d for d in defs}},
                open("/tmp/toolsq11-pre.pkl", "wb"))
    print(sum(len(d["clauses"]) for d in data), "clauses;", sum(len(d["sents"]) for d in data), "sentences")
asyncio.run(main())
