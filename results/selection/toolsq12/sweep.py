"""Clause picks swept through the real select code in process (scripts/tune_select.py's harness:
stand-in database, real model, vectors memoised in /tmp/toolsq12-vectors.pkl).

    .venv/bin/python results/selection/toolsq12/sweep.py tune                  # the grid, tuning half only
    .venv/bin/python results/selection/toolsq12/sweep.py held_out MIN_TERMS Z   # one setting, read once
Prints (recall@5, all_needed@5, missed tools) per half; Z "off" is select without clause picks."""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
ts.CACHE = Path("/tmp/toolsq12-vectors.pkl")
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
    return emb, db, queries


async def evaluate(emb, db, queries, part):
    rec, alln, miss, got_by_id = [], [], 0, {}
    for q in queries:
        if split_of(q["id"]) != part:
            continue
        a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
        got = [t["name"] for t in a["tools"]][:5]
        exp = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
        h = sum(e in got for e in exp)
        rec.append(h / len(exp)); alln.append(h == len(exp)); miss += len(exp) - h
        got_by_id[q["id"]] = (h, len(exp), got, [t.get("clause") for t in a["tools"] if t.get("clause")])
    return (round(sum(rec) / len(rec), 4), round(sum(alln) / len(alln), 4), miss), got_by_id


def configure(min_terms, z):
    tl.CLAUSE_MIN_TERMS = int(min_terms)
    tl.CLAUSE_Z = float("inf") if z == "off" else float(z)


async def main(argv):
    emb, db, queries = await setup()
    part = argv[0]
    grid = [(argv[1], "off"), (argv[1], argv[2])] if len(argv) > 2 else \
        [(3, "off")] + [(m, z) for m in (3, 4, 5, 6) for z in (3.0, 3.5, 4.0, 4.5, 5.0, 6.0)]
    base = None
    for m, z in grid:
        configure(m, z)
        res, by_id = await evaluate(emb, db, queries, part)
        if z == "off":
            base = by_id
        moved = [] if base is None else [(i, base[i][0], by_id[i][0], by_id[i][3]) for i in by_id if by_id[i][0] != base[i][0]]
        print(part, "clause_min_terms", m, "clause_z", z, res, "moved:", json.dumps(moved), flush=True)
    emb.save()

asyncio.run(main(sys.argv[1:]))
