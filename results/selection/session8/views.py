"""More vector views of a tool (as the description view): its name's words alone; its name and parameters with
their descriptions. A tool is as close as its closest view (max), or the view adds w x its z-score."""
import asyncio, sys
sys.path.insert(0, "results/selection/session8")
from alloc import *
import alloc as A
from ltr import DEFS
from common import ts
from edgeindex.selection.text import split_identifier

async def views():
    emb = ts.MemoEmbedder()
    name_t = [" ".join(split_identifier(d.name)) for d in DEFS]
    def ptext(d):
        props = d.parameters.get("properties") or {}
        return " ".join(split_identifier(d.name)) + ": " + "; ".join(
            f"{' '.join(split_identifier(p))} ({(v or {}).get('description', '')})" for p, v in props.items())
    lead_t = [" ".join(split_identifier(d.name)) + ": " + (d.description or "").split(". ")[0] for d in DEFS]
    out = {"name": await emb.embed(name_t), "params": await emb.embed([ptext(d) for d in DEFS]), "lead": await emb.embed(lead_t)}
    Q = {}
    for d in DATA:
        for s in [d["whole"], *d["sents"]]:
            Q[s["text"]] = await emb.embed_query(s["text"])
    emb.save()
    return out, Q

V, Q = asyncio.run(views())

def rescore(s, view, mode, w):
    qv = Q[s["text"]]; c = V[view] @ qv
    vec = np.maximum(s["vec"], c) if mode == "max" else s["vec"]
    bz = (s["fused"] - 0.6 * zscore(s["vec"])) / 0.4
    f = 0.6 * zscore(vec) + 0.4 * bz + (w * zscore(c) if mode == "add" else 0)
    return {**s, "vec": vec, "fused": f.astype(np.float32)}

def alloc(d, view="name", mode="max", w=0.0, sents=True):
    d2 = {**d, "whole": rescore(d["whole"], view, mode, w), "sents": [rescore(s, view, mode, w) for s in d["sents"]] if sents else d["sents"]}
    return baseline(d2)

if __name__ == "__main__":
    T = ("tune",)
    print("base", score(baseline, T))
    for view in ("name", "params", "lead"):
        print(view, "max", score(alloc, T, view=view, mode="max"))
        for w in (0.1, 0.2, 0.3, 0.5):
            print(view, "add", w, score(alloc, T, view=view, mode="add", w=w))
