"""Shared set-up for session 11 (copied from session 10): the real catalogue and select code, in process."""
import sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
ts.CACHE = Path("/tmp/toolsq11-vectors.pkl")
from edgeindex.selection import tools as tl
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.evaluation.selection_split import split_of

FOLDER = Path("../shared/data/tools-bfcl")


async def setup():
    emb = ts.MemoEmbedder()
    raw = ts._jsonl(FOLDER / "tools.jsonl"); queries = ts._jsonl(FOLDER / "queries.jsonl")
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs]); dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = ts.FakeDB({"tool_catalog": rows, "tool_example_vectors": []}); tl._cache.clear()
    return emb, db, queries, defs


async def evaluate(emb, db, queries, part=None, k=5, verbose=False):
    out = {"tune": [], "held_out": []}
    for q in queries:
        s = split_of(q["id"])
        if part and s != part:
            continue
        a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, k, tl.DEFAULT_THRESHOLD, True, True, True))
        got = [t["name"] for t in a["tools"]][:5]
        exp = q["expected"]
        r = sum(e in got for e in exp) / len(exp)
        out[s].append((r, float(all(e in got for e in exp)), q, got))
    res = {}
    for s, v in out.items():
        if v:
            res[s] = (round(sum(x[0] for x in v) / len(v), 4), round(sum(x[1] for x in v) / len(v), 4), sum(len(x[2]["expected"]) - round(x[0] * len(x[2]["expected"])) for x in v))
    return res, out
