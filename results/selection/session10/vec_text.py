"""The tool's text in the vector view: the definition vector (select embeds ``embedded_text``: name words,
description, parameter names) replaced by another text of the same tool, embedded by the real model; the
description view, BM25 and the allocation stay select's. Run from the worktree root:
  nice -n 15 .venv/bin/python results/selection/session10/vec_text.py [tune|both]"""
import asyncio, sys
sys.path.insert(0, "results/selection/session10")
import numpy as np
import alloc
from alloc import DATA, NAMES, P, score, baseline
from common import ts
from edgeindex.selection.scoring import zscore
from edgeindex.selection.text import split_identifier

DEFS, D, HAS = P["defs"], P["desc_vecs"], P["has_desc"]
PARTS = ("tune", "held_out") if sys.argv[1:] == ["both"] else ("tune",)

def words(s): return " ".join(split_identifier(s)) or s

def text(name, kind):
    d = DEFS[name]
    props = (d.parameters or {}).get("properties") or {}
    req = set((d.parameters or {}).get("required") or [])
    leaf = name.split(".")[-1]
    if kind == "select": return d.embedded_text()
    if kind == "required params only":
        return f"{words(name)}: {d.description} Parameters: {', '.join(words(p) for p in props if p in req)}"
    if kind == "no params":
        return f"{words(name)}: {d.description}"
    if kind == "params with descriptions":
        ps = "; ".join(f"{words(p)}: {str((v or {}).get('description', ''))}" for p, v in props.items())
        return f"{words(name)}: {d.description} Parameters: {ps}"
    if kind == "leaf name only":
        return f"{words(leaf)}: {d.description} Parameters: {', '.join(words(p) for p in props)}"
    if kind == "name twice":
        return f"{words(name)}. {words(leaf)}: {d.description} Parameters: {', '.join(words(p) for p in props)}"
    if kind == "enum values added":
        en = ", ".join(str(e) for v in props.values() if isinstance(v, dict)
                       for e in (v.get("enum") if isinstance(v.get("enum"), list) else [])[:20])
        return d.embedded_text() + (f" Values: {en}" if en else "")
    raise ValueError(kind)

async def main():
    emb = ts.MemoEmbedder()
    for kind in ("select", "required params only", "no params", "params with descriptions", "leaf name only",
                 "name twice", "enum values added"):
        T = (await emb.embed([text(n, kind) for n in NAMES])).astype(np.float32)
        emb.save()
        def re_(s):
            v = T @ s["qv"]
            v = np.where(HAS, np.maximum(v, D @ s["qv"]), v)
            return dict(s, vec=v, fused=0.6 * zscore(v) + 0.4 * zscore(s["bm25"]))
        alloc.DATA = [dict(d, whole=re_(d["whole"]), sents=[re_(s) for s in d["sents"]]) for d in DATA]
        print(f"{kind:30s} {score(baseline, parts=PARTS)}", flush=True)
asyncio.run(main())
