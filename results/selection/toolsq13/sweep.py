"""The tail cut swept through the real select code in process (scripts/tune_select.py's harness: stand-in
database, real model, vectors memoised in /tmp/toolsq13-vectors.pkl, a copy of toolsq12's memo).

    .venv/bin/python results/selection/toolsq13/sweep.py tune                    # the grid, tuning half only
    .venv/bin/python results/selection/toolsq13/sweep.py held_out share SHARE KEEP_Z   # one setting, read once
    .venv/bin/python results/selection/toolsq13/sweep.py held_out gap GAP KEEP_Z
    .venv/bin/python results/selection/toolsq13/sweep.py tune sure                # the top's vector z gate
    .venv/bin/python results/selection/toolsq13/sweep.py held_out share SHARE KEEP_Z SURE_Z
Prints per setting: recall@5, all_needed@5, missed tools, recall@10 (k=10), mean_sent, token_reduction, and the
requests whose hits moved against the cut off."""
import asyncio, json, math, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
ts.CACHE = Path("/tmp/toolsq13-vectors.pkl")
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import z_cut
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
    rec, rec10, alln, sent, red, miss, by_id = [], [], [], [], [], 0, {}
    for q in queries:
        if part != "all" and split_of(q["id"]) != part:
            continue
        a = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
        w = await tl.select(db, emb, ["e"], tl.SelectRequest(q["query"], None, 10, tl.DEFAULT_THRESHOLD, True, True, True))
        got = [t["name"] for t in a["tools"]]
        wide = [t["name"] for t in w["tools"]]
        exp = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
        h = sum(e in got[:5] for e in exp)
        rec.append(h / len(exp)); alln.append(h == len(exp)); miss += len(exp) - h
        rec10.append(sum(e in wide[:10] for e in exp) / len(exp))
        sent.append(len(got)); red.append(1 - a["tokens"]["selected"] / a["tokens"]["registry"])
        by_id[q["id"]] = (h, len(exp), len(got))
    m = lambda v: round(sum(v) / len(v), 4)
    return {"recall@5": m(rec), "all_needed@5": m(alln), "missed": miss, "recall@10": m(rec10),
            "mean_sent": m(sent), "token_reduction": m(red)}, by_id


ORIGINAL = tl.tail_bar


def configure(form, value, keep, sure="-inf"):
    value = float(value); keep = float(keep); sure = float(sure)
    if form == "off":
        tl.tail_bar = lambda top, top_vz, n: 0.0
    elif form == "share":   # the shipped tail_bar (tools.py) with these constants
        tl.TAIL_SHARE, tl.TAIL_KEEP_Z, tl.TAIL_SURE_Z = value, keep, sure
        tl.tail_bar = ORIGINAL
    else:   # gap: a tool more than GAP z under the best
        tl.tail_bar = lambda top, top_vz, n: 0.0 if top_vz < sure else min(top - value, z_cut(keep, n))


async def main(argv):
    emb, db, queries = await setup()
    part = argv[0]
    if len(argv) > 1 and argv[1] == "sure":   # the best tool's vector z gate, session 13's second grid
        grid = [("off", 0, "inf")] + [("share", s, 5.0, sz) for sz in ("-inf", 2.0, 2.5, 3.0, 3.5)
                                       for s in (0.4, 0.5)]
    elif len(argv) > 1:
        grid = [("off", 0, "inf"), tuple(argv[1:])]
    else:
        grid = [("off", 0, "inf")] + [("share", s, kz) for kz in ("inf", 5.0, 4.0, 3.0)
                                       for s in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)] + \
               [("gap", g, kz) for kz in ("inf", 4.0) for g in (5.0, 4.0, 3.5, 3.0, 2.5, 2.0)]
    base = None
    for form, value, keep, *sure in grid:
        configure(form, value, keep, *sure)
        res, by_id = await evaluate(emb, db, queries, part)
        if form == "off":
            base = by_id
        moved = [(i, base[i][0], by_id[i][0], by_id[i][1]) for i in by_id if by_id[i][0] != base[i][0]]
        print(part, form, value, "keep_z", keep, "sure_z", *(sure or ["-inf"]), json.dumps(res), "moved(id, hits off, hits, needed):",
              json.dumps(moved), flush=True)
    emb.save()

asyncio.run(main(sys.argv[1:]))
