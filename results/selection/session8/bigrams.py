"""BM25 field of a tool name's adjacent word pairs written as one ("binomialprobability" for
calculate_binomial_probability); requests already add their adjacent pairs (text.query_terms). Real select code."""
import asyncio, sys
sys.path.insert(0, "results/selection/session8")
from common import *
from edgeindex.selection.text import Field, split_identifier, STOPWORDS

orig = tl._fields
def with_bigrams(w, desc_w=0.0):
    def fields(row):
        words = [x for x in split_identifier(row["name"]) if x not in STOPWORDS]
        out = orig(row) + [Field(" ".join(a + b for a, b in zip(words, words[1:])), w)]
        if desc_w:
            dw = [x for x in split_identifier(row["description"] or "") if x not in STOPWORDS]
            out.append(Field(" ".join(a + b for a, b in zip(dw, dw[1:])), desc_w))
        return out
    return fields

async def main():
    emb, db, queries, defs = await setup()
    print("base", (await evaluate(emb, db, queries, part="tune"))[0])
    for w, dw in [(0.5, 0), (1.0, 0), (2.0, 0), (3.0, 0), (0, 0.5), (0, 1.0), (1.0, 0.5)]:
        tl._fields = with_bigrams(w, dw); tl._cache.clear()
        print("name pairs", w, "description pairs", dw, (await evaluate(emb, db, queries, part="tune"))[0])
    tl._fields = orig
asyncio.run(main())
