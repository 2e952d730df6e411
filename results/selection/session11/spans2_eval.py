"""spans2.py's variants scored as spans_sweep.py's best (sentences from spans, pick cut segz, span clause picks cz)."""
import asyncio, pickle, sys
sys.path.insert(0, "results/selection/session11")
sys.argv = sys.argv[:1] + ["/tmp/toolsq11-spans.pkl"]
import spans_sweep as sw   # noqa: E402  (its main() is not run: guarded below)
from common import setup, tl
import alloc

V2 = pickle.load(open("/tmp/toolsq11-spans2.pkl", "rb"))

async def main():
    emb, db, queries, defs = await setup()
    cat = await tl.catalogue_for(db, ["e"])
    own = list(alloc.DATA)
    def sc(s, v):
        if v is None: return s
        x = cat.catalogue.score(s["text"], v); return {"vec": x.vector, "fused": x.fused, "text": s["text"]}
    for variant, SP in V2.items():
        alloc.DATA[:] = [dict(d, sents=[sc(s, v) for s, v in zip(d["sents"], SP[d["q"]["query"]]["sents"])],
                              clauses=[sc(s, v) for s, v in zip(d["clauses"], SP[d["q"]["query"]]["clauses"])]) for d in own]
        for segz, cz in ((3.0, None), (3.5, 3.0), (3.0, 4.0)):
            print(f"{variant:16s} segz {segz} cz {cz}", alloc.score(sw.alloc_span, segz=segz, cz=cz), flush=True)
asyncio.run(main())
