"""Per-request server timings of bench_select.py --per-query runs over tools-bfcl's 1,000 requests, by padded token
rows of the select's embedding call (rows_all.py's count), main against the branch.
    .venv/bin/python results/selection/selectlat13/per_query.py MAIN.jsonl BRANCH.jsonl [...pairs]"""
import json, sys
from pathlib import Path
import numpy as np
from edgeindex.selection import tools as tl
from edgeindex.bindings.onnx_query import length_buckets
from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained("sentence-transformers/all-MiniLM-L6-v2") if False else None
from edgeindex.bindings.ai import local_embedder
tok = local_embedder()._model.tokenizer


def rows(q):
    parts = tl.segments(q)
    texts = [q, *(parts if len(parts) >= 2 else [])]
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens))


def load(path):
    return [json.loads(l) for l in Path(path).read_text().splitlines()]


files = sys.argv[1:]
runs = {f: load(f) for f in files}
first = runs[files[0]]
r = np.array([rows(x["query"]) for x in first])
bands = [(0, 40), (40, 100), (100, 200), (200, 400), (400, 1000)]
for f in files:
    d = runs[f]
    assert [x["query"] for x in d] == [x["query"] for x in first]
    print(f"== {Path(f).name}")
    for key in ("sdk_ms", "took_ms", "embed_ms", "score_ms", "catalogue_ms"):
        v = np.array([x.get(key, np.nan) for x in d], float)
        print(f"  {key:12s} all 1000 p50 {np.nanpercentile(v, 50):7.2f} p99 {np.nanpercentile(v, 99):7.2f} max {np.nanmax(v):7.2f}"
              f" | first 500 p50 {np.nanpercentile(v[:500], 50):6.2f} p99 {np.nanpercentile(v[:500], 99):6.2f}")
    sdk = np.array([x["sdk_ms"] for x in d]); emb = np.array([x.get("embed_ms", np.nan) for x in d], float)
    sc = np.array([x.get("score_ms", np.nan) for x in d], float)
    for lo, hi in bands:
        s = (r >= lo) & (r < hi)
        print(f"  rows [{lo},{hi}) n={s.sum():4d}: sdk mean {sdk[s].mean():7.2f} p50 {np.percentile(sdk[s], 50):7.2f}"
              f" | embed mean {np.nanmean(emb[s]):7.2f} ({np.nanmean(emb[s]) / np.mean(r[s]):.3f} ms/row)"
              f" | score mean {np.nanmean(sc[s]):5.2f}")
    worst = np.argsort(-sdk)[:10]
    print("  10 slowest (sdk, took, embed, score, rows):", [(round(sdk[i]), round(d[i]["took_ms"]), round(emb[i]),
                                                             round(sc[i], 1), int(r[i])) for i in worst])
