"""Column vectors: a question's cosine to each column ("table column" words) as one more signal."""
import asyncio, sys
sys.path.insert(0, "results/selection/session7"); sys.path.insert(0, "scripts")
import numpy as np
from spider_exp import setup, evaluate
from edgeindex.selection import indices as ix
from edgeindex.selection.scoring import zscore
from edgeindex.selection.text import split_identifier

async def main():
    emb, defs, cat, queries, qvs = await setup()
    names = [r["name"] for r in cat.rows]
    n = len(names)
    col_text, col_owner = [], []
    for i, r in enumerate(cat.rows):
        for f in r["fields"]:
            if "." in f:
                col_text.append(" ".join(split_identifier(f))); col_owner.append(i)
    cv = await emb.embed(col_text); emb.save()
    col_owner = np.asarray(col_owner)
    order = np.argsort(col_owner, kind="stable"); assert (order == np.arange(len(order))).all()
    starts = np.flatnonzero(np.r_[True, col_owner[1:] != col_owner[:-1]])
    base, cols = [], []
    for q, v in zip(queries, qvs):
        s = cat.catalogue.score(q["query"], v); p = cat.parts.score(q["query"], v)
        best_part = np.full(n, -np.inf, np.float32); np.maximum.at(best_part, cat.part_owner, p.fused)
        base.append(ix.PART_WEIGHT * zscore(best_part) + (1 - ix.PART_WEIGHT) * zscore(s.fused))
        c = cv @ v
        cols.append(c)
    print("base", evaluate(names, queries, base))
    for m in (3, 5, 8, 12):
        agg = []
        for c in cols:
            a = np.zeros(n, np.float32)
            for k, st in enumerate(starts):
                en = starts[k + 1] if k + 1 < len(starts) else len(c)
                seg = np.sort(c[st:en])[::-1][:m]
                a[col_owner[st]] = seg.mean()
            agg.append(zscore(a))
        for w in (0.5, 0.75, 1.0, 1.5):
            print(m, w, evaluate(names, queries, [b + w * a for b, a in zip(base, agg)]))
asyncio.run(main())
