"""Column vectors, variants: column text, aggregation (top-m mean, log-sum-exp), per table or per database."""
import asyncio, sys
sys.path.insert(0, "results/selection/session7"); sys.path.insert(0, "scripts")
import numpy as np
from spider_exp import setup, evaluate
from edgeindex.selection import indices as ix
from edgeindex.selection.scoring import zscore
from edgeindex.selection.text import split_identifier

def segs(owner):
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    ends = np.r_[starts[1:], len(owner)]
    return list(zip(starts, ends))

async def main(variant):
    emb, defs, cat, queries, qvs = await setup()
    names = [r["name"] for r in cat.rows]; n = len(names)
    text, owner, towner = [], [], []
    part_index = {(cat.part_owner[j], cat.part_names[j]): j for j in range(len(cat.part_names))}
    for i, r in enumerate(cat.rows):
        for f in r["fields"]:
            if "." not in f: continue
            t, c = f.split(".", 1)
            text.append({"tc": " ".join(split_identifier(f)), "c": " ".join(split_identifier(c)),
                         "t:c": " ".join(split_identifier(t)) + ": " + " ".join(split_identifier(c))}[variant])
            owner.append(i); towner.append(part_index[(i, t)])
    cv = await emb.embed(text); emb.save()
    owner = np.asarray(owner); towner = np.asarray(towner)
    dsegs = segs(owner)
    base, cols, pf = [], [], []
    for q, v in zip(queries, qvs):
        s = cat.catalogue.score(q["query"], v); p = cat.parts.score(q["query"], v)
        pf.append((s.fused, p.fused))
        cols.append(cv @ v)
    def run(part_m, db_m, wp, wd, temp=None):
        finals = []
        for (sf, pfu), c in zip(pf, cols):
            p = pfu.copy()
            if wp:
                pa = np.full(len(p), 0.0, np.float32)
                order = np.argsort(towner, kind="stable"); ts_ = towner[order]; cs = c[order]
                for a, b in segs(ts_):
                    pa[ts_[a]] = np.sort(cs[a:b])[::-1][:part_m].mean()
                p = zscore(p) + wp * zscore(pa)
            best_part = np.full(n, -np.inf, np.float32); np.maximum.at(best_part, cat.part_owner, p)
            f = ix.PART_WEIGHT * zscore(best_part) + (1 - ix.PART_WEIGHT) * zscore(sf)
            if wd:
                a = np.zeros(n, np.float32)
                for st, en in dsegs:
                    seg = c[st:en]
                    a[owner[st]] = (np.sort(seg)[::-1][:db_m].mean() if temp is None
                                    else temp * np.log(np.exp((seg - seg.max()) / temp).sum()) + seg.max())
                f = f + wd * zscore(a)
            finals.append(f)
        return evaluate(names, queries, finals)
    print(variant, "base", run(0, 0, 0, 0))
    if len(sys.argv) > 2:
        for pm, wp in ((2, 0.5),):
            for m, w in ((5, 0.5),):
                print(variant, "combo", pm, wp, m, w, run(pm, m, wp, w))
        return
    for m in (3, 5): 
        for w in (0.35, 0.5, 0.75): print(variant, "db", m, w, run(0, m, 0, w))
    for t in (0.02, 0.05, 0.1):
        for w in (0.35, 0.5, 0.75): print(variant, "lse", t, w, run(0, 1, 0, w, t))
    for m in (1, 2, 3):
        for w in (0.25, 0.5, 1.0): print(variant, "part", m, w, run(m, 0, w, 0))
asyncio.run(main(sys.argv[1]))
