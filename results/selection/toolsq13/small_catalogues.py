"""The tail cut on smaller catalogues than tools-bfcl's 769: for every request of the tuning half, a catalogue of
its needed tools plus random others (SIZE in all, seeded per request), select with the cut off and on.
    .venv/bin/python results/selection/toolsq13/small_catalogues.py 20 100 300
    SHARES=0.3,0.35 .venv/bin/python results/selection/toolsq13/small_catalogues.py 100   # other shares too"""
import os
import asyncio, json, random, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import tune_select as ts
ts.CACHE = Path("/tmp/toolsq13-vectors.pkl")
from edgeindex.selection import tools as tl
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.evaluation.selection_split import split_of

FOLDER = Path("../shared/data/tools-bfcl")


async def main(sizes):
    emb = ts.MemoEmbedder()
    defs = [parse_tool(t, "t") for t in ts._jsonl(FOLDER / "tools.jsonl")]
    queries = [q for q in ts._jsonl(FOLDER / "queries.jsonl") if split_of(q["id"]) == "tune"]
    vecs = await emb.embed([d.embedded_text() for d in defs]); dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = {d.name: {"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
                     "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
                     "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
                     "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)}
    names = sorted(rows)
    for size in sizes:
        out = {}
        base = {}
        for label, share in [("off", 0.0), ("on", tl.TAIL_SHARE)] + [(f"share {x}", float(x)) for x in
                                                                    filter(None, os.environ.get("SHARES", "").split(","))]:
            saved = tl.TAIL_SHARE; tl.TAIL_SHARE = share
            rec, alln, sent, fallback = [], [], [], 0
            for n, q in enumerate(queries):
                exp = q["expected"] if isinstance(q["expected"], list) else [q["expected"]]
                rnd = random.Random(q["id"])
                pick = list(dict.fromkeys(exp + rnd.sample(names, size)))[:size]
                db = ts.FakeDB({"tool_catalog": [rows[p] for p in pick], "tool_example_vectors": []})
                tl._cache.clear()
                a = await tl.select(db, emb, [f"e{size}-{n}"], tl.SelectRequest(q["query"], None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
                got = [t["name"] for t in a["tools"]]
                h = sum(e in got[:5] for e in exp)
                if label == "off":
                    base[q["id"]] = h
                elif h != base[q["id"]]:
                    print("  ", size, label, q["id"], "hits", base[q["id"]], "->", h, "of", len(exp), flush=True)
                rec.append(h / len(exp)); alln.append(h == len(exp)); sent.append(len(got)); fallback += a["fallback"] is not None
            tl.TAIL_SHARE = saved
            m = lambda v: round(sum(v) / len(v), 4)
            out[label] = {"recall@5": m(rec), "all_needed@5": m(alln), "mean_sent": m(sent), "fallbacks": fallback}
        print("tune, catalogue of", size, "tools:", json.dumps(out), flush=True)
    emb.save()

asyncio.run(main([int(s) for s in sys.argv[1:]]))
