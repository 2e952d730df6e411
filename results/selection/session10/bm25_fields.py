"""The tool's text in the BM25 view: which fields, with what weights, and BM25's own k1 / b. The vector
view and the allocation are select's (stored by precompute.py); only BM25 is rebuilt (the real
BM25Index). Run from the worktree root:
  nice -n 15 .venv/bin/python results/selection/session10/bm25_fields.py [tune|both]"""
import re, sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
import alloc
from alloc import DATA, NAMES, P, score, baseline
from edgeindex.selection.scoring import zscore
from edgeindex.selection.text import BM25Index, Field, split_identifier

DEFS = P["defs"]
PARTS = ("tune", "held_out") if sys.argv[1:] == ["both"] else ("tune",)

def fields(name, w):
    d = DEFS[name]
    props = (d.parameters or {}).get("properties") or {}
    req = set((d.parameters or {}).get("required") or [])
    pdesc = " ".join(str(p.get("description", "")) for p in props.values() if isinstance(p, dict))
    enums = " ".join(str(e) for p in props.values() if isinstance(p, dict)
                     for e in (p.get("enum") if isinstance(p.get("enum"), list) else [])[:50])
    parts = name.split(".")
    leaf, space = parts[-1], " ".join(parts[:-1])
    first = re.split(r"(?<=[.!?])\s", d.description or "", maxsplit=1)[0]
    out = [Field(" ".join(split_identifier(name)), w.get("name", 3.0)),
           Field(d.description or "", w.get("desc", 1.0)),
           Field(" ".join(p for p in props if p not in req), w.get("opt", 0.5)),
           Field(" ".join(p for p in props if p in req), w.get("req", 0.5)),
           Field(" ".join(filter(None, [d.category or "", *d.tags])), 1.0),
           Field(pdesc, w.get("pdesc", 0.3)),
           Field(enums, w.get("enum", 0.5))]
    if w.get("leaf") and (len(parts) > 1 or not w.get("dotted_only")):
        out.append(Field(" ".join(split_identifier(leaf)), w["leaf"]))
    if w.get("space"): out.append(Field(" ".join(split_identifier(space)), w["space"]))
    if w.get("first"): out.append(Field(first, w["first"]))
    return out

def variant(label, k1=1.2, b=0.75, alpha=0.6, **w):
    idx = BM25Index([fields(n, w) for n in NAMES], k1=k1, b=b)
    def re_(s):
        bm, _ = idx.scores(s["text"])
        return dict(s, bm25=bm, fused=alpha * zscore(s["vec"]) + (1 - alpha) * zscore(bm))
    alloc.DATA = [dict(d, whole=re_(d["whole"]), sents=[re_(s) for s in d["sents"]]) for d in DATA]
    r = score(baseline, parts=PARTS)
    print(f"{label:45s} {r}", flush=True)
    return r

if __name__ == "__main__":
    variant("select's fields (reproduces)")
    for v in (0.75, 1.0, 1.5): variant(f"required param names {v}", req=v)
    for v in (0.0, 0.25): variant(f"optional param names {v}", opt=v)
    for v in (1.0, 2.0, 3.0): variant(f"name's leaf again x{v}", leaf=v)
    for v in (-1.0,): pass
    for v in (0.5, 1.0): variant(f"description's first sentence again x{v}", first=v)
    for v in (0.0, 0.15, 0.6): variant(f"param descriptions {v}", pdesc=v)
    for v in (0.0, 0.25, 1.0): variant(f"enum values {v}", enum=v)
    for v in (2.0, 4.0): variant(f"name {v}", name=v)
    for k1 in (0.6, 0.9, 1.5, 2.0): variant(f"k1 {k1}", k1=k1)
    for b in (0.3, 0.5, 0.9, 1.0): variant(f"b {b}", b=b)
