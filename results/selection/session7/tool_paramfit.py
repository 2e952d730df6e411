"""Tools: share of a tool's required parameters the request evidences (a name word, an enum value, or a
date/year value for a date-like parameter), added as gamma x share; with or without parameter vectors."""
import asyncio, re, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection import field_vectors as fv
from edgeindex.selection.scoring import zscore, Scores
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.selection.text import split_identifier, terms
from edgeindex.evaluation.selection_split import split_of

DATE = re.compile(r"\b(1[0-9]|20)\d\d\b|\b\d{1,2}[/-]\d{1,2}[/-]\d{2,4}\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I)
DATE_WORDS = {"date", "year", "day", "month", "time"}

def words(t): return " ".join(split_identifier(t))

async def main(grid):
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
    # per tool: its required parameters as (name terms, enum terms, date-like)
    specs = []
    texts, owner = [], []
    for i, d in enumerate(defs):
        props = d.parameters.get("properties") or {}
        req = set(d.parameters.get("required") or props)
        leaf = words(d.name.rsplit(".", 1)[-1])
        ps = []
        for p, spec in props.items():
            spec = spec if isinstance(spec, dict) else {}
            desc = str(spec.get("description", ""))
            texts.append(f"{leaf} {words(p)}: {desc}"); owner.append(i)
            if p not in req: continue
            nt = set(terms(words(p)))
            en = set(t for e in (spec.get("enum") or [])[:50] for t in terms(str(e)))
            datey = bool(nt & DATE_WORDS) or "yyyy" in desc.lower()
            ps.append((nt, en, datey))
        specs.append(ps)
    pm = await emb.embed(texts); owner = np.asarray(owner); emb.save()
    orig = cat.catalogue.score
    state = {}
    def fit(query):
        qt = set(terms(query)); has_date = bool(DATE.search(query))
        out = np.zeros(len(specs), np.float32)
        for i, ps in enumerate(specs):
            if not ps: continue
            ok = sum(1 for nt, en, datey in ps if (nt & qt) or (en & qt) or (datey and has_date))
            out[i] = ok / len(ps)
        return out
    def score(query, qv, **kw):
        s = orig(query, qv, **kw)
        fused = s.fused
        if state["w"]:
            c = pm @ qv.astype(np.float32)
            mean, has = fv.top_mean(c, owner, len(defs), 2)
            fused = fused + state["w"] * zscore(np.where(has, mean, s.vector))
        if state["g"]:
            fused = fused + state["g"] * fit(query)
        return Scores(s.vector, s.text, fused.astype(np.float32))
    cat.catalogue.score = score
    for g, w in grid:
        state.update(g=g, w=w)
        res = {"tune": [], "held_out": []}; alln = {"tune": [], "held_out": []}
        for q in queries:
            exp = q["expected"]
            a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
            names = [t["name"] for t in a["tools"]][:5]
            part = split_of(q["id"])
            res[part].append(sum(e in names for e in exp) / len(exp)); alln[part].append(float(all(e in names for e in exp)))
        print(g, w, {k: round(float(np.mean(v)), 4) for k, v in res.items()},
              "all_needed", {k: round(float(np.mean(v)), 4) for k, v in alln.items()}, flush=True)

grid = [tuple(map(float, a.split(","))) for a in sys.argv[1:]]
asyncio.run(main(grid))
