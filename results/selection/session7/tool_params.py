"""Tools: each parameter embedded on its own, a tool also scored by its closest parameters (offline)."""
import asyncio, sys, itertools
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection import field_vectors as fv
from edgeindex.selection.scoring import zscore, Scores
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.selection.text import split_identifier
from edgeindex.evaluation.selection_split import split_of

def words(t): return " ".join(split_identifier(t))

def param_texts(d, variant):
    props = d.parameters.get("properties") or {}
    leaf = words(d.name.rsplit(".", 1)[-1])
    out = []
    for p, spec in props.items():
        desc = str(spec.get("description", "")) if isinstance(spec, dict) else ""
        out.append({"pd": f"{words(p)}: {desc}", "p": words(p), "lp": f"{leaf} {words(p)}",
                    "lpd": f"{leaf} {words(p)}: {desc}"}[variant])
    return out

async def main(variant, grid):
    folder = Path("../shared/data/tools-bfcl"); emb = ts.MemoEmbedder()
    raw = ts._jsonl(folder / "tools.jsonl"); queries = ts._jsonl(folder / "queries.jsonl")
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []})
    tl._cache.clear()
    cat = await tl.catalogue_for(db, ["e"])
    texts, owner = [], []
    for i, d in enumerate(defs):
        for t in param_texts(d, variant):
            texts.append(t); owner.append(i)
    pm = await emb.embed(texts); owner = np.asarray(owner); emb.save()
    orig = cat.catalogue.score
    state = {}
    def score(query, qv, **kw):
        s = orig(query, qv, **kw)
        if state["w"] == 0: return s
        c = pm @ qv.astype(np.float32)
        mean, has = fv.top_mean(c, owner, len(defs), state["m"])
        agg = np.where(has, mean, s.vector)
        return Scores(s.vector, s.text, (s.fused + state["w"] * zscore(agg)).astype(np.float32))
    cat.catalogue.score = score
    for m, w in grid:
        state.update(m=m, w=w)
        res = {"tune": [], "held_out": []}; alln = {"tune": [], "held_out": []}
        for q in queries:
            exp = q["expected"]
            a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
            names = [t["name"] for t in a["tools"]][:5]
            part = split_of(q["id"])
            res[part].append(sum(e in names for e in exp) / len(exp)); alln[part].append(float(all(e in names for e in exp)))
        # recall@5 here as the mean of per-query recall, as tune_select reports it
        print(variant, m, w, {k: round(float(np.mean(v)), 4) for k, v in res.items()},
              "all_needed", {k: round(float(np.mean(v)), 4) for k, v in alln.items()}, flush=True)
    emb.save()

variant = sys.argv[1]
grid = [(2, 0.2), (1, 0.2), (2, 0.35), (3, 0.2)]
asyncio.run(main(variant, grid))
