"""Tools: the slots left after the lead and the sentences' picks are filled by what the chosen tools do not
explain yet: the request's vector with the chosen tools' directions taken out, and BM25 over the request's
terms the chosen tools do not hold (offline)."""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, "scripts")
import numpy as np
import tune_select as ts
from edgeindex.selection import tools as tl
from edgeindex.selection.scoring import zscore, ALPHA
from edgeindex.selection.definitions import count_tokens, parse_tool
from edgeindex.selection.text import query_terms
from edgeindex.evaluation.selection_split import split_of

async def main(parts_arg):
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
    C = cat.catalogue
    names = [r["name"] for r in cat.rows]
    bm = C.bm25
    def run(mode, beta, only_multi):
        res = {"tune": [], "held_out": []}
        for q in queries:
            if parts_arg != "all" and split_of(q["id"]) != parts_arg: continue
            text = q["query"]
            parts = tl.segments(text); parts = parts if len(parts) >= 2 else []
            vs = [emb.queries.get(t) for t in [text, *parts]]
            qv = vs[0].astype(np.float32)
            s = C.score(text, qv)
            order = np.argsort(-s.fused, kind="stable")
            picks = tl._segment_picks(parts, vs[1:], cat)
            lead = [int(i) for i in order[:tl.SEGMENT_LEAD]]
            chosen = list(dict.fromkeys(lead + [i for i, _ in picks]))[:5]
            if mode and len(chosen) < 5 and (not only_multi or parts):
                # residual vector: remove the chosen tools' directions (Gram-Schmidt)
                basis = []
                for i in chosen:
                    t = C.vectors[i].copy()
                    for b in basis: t -= (t @ b) * b
                    nrm = np.linalg.norm(t)
                    if nrm > 1e-6: basis.append(t / nrm)
                r = qv.copy()
                for b in basis: r -= beta * (r @ b) * b
                vec = C.vectors @ r
                if C.examples is not None: C.examples.raise_to_best(vec, r)
                cols = bm.query_terms(text)
                held = set()
                if "t" in mode:
                    W = bm.weights.tocsr()
                    for i in chosen: held |= set(W.indices[W.indptr[i]:W.indptr[i+1]].tolist())
                keep = [c for c in cols if c not in held] or cols
                sc = np.zeros(C.size, np.float32)
                for c in keep:
                    a, b = bm.weights.indptr[c], bm.weights.indptr[c+1]
                    sc[bm.weights.indices[a:b]] += bm.weights.data[a:b]
                fused = ALPHA * zscore(vec) + (1 - ALPHA) * zscore(sc)
                rest = [int(i) for i in np.argsort(-fused, kind="stable") if int(i) not in chosen]
            else:
                rest = [int(i) for i in order if int(i) not in chosen]
            got = [names[i] for i in (chosen + rest)[:5]]
            res[split_of(q["id"])].append(sum(e in got for e in q["expected"]) / len(q["expected"]))
        return {k: round(float(np.mean(v)), 4) for k, v in res.items() if v}
    for q in queries:
        parts = tl.segments(q["query"]); parts = parts if len(parts) >= 2 else []
        await tl.embed_texts(emb, [q["query"], *parts])
    print("base (no threshold)", run("", 0, False), flush=True)
    for mode in ("v", "vt"):
        for beta in (0.5, 1.0):
            for only in (False, True):
                print(mode, beta, only, run(mode, beta, only), flush=True)
    emb.save()
asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "tune"))
