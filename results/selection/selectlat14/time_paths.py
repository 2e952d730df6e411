"""Select's query embedding call for tools-bfcl requests, fp32 graph against a quantized one (quantize.py), in one
process, alternating request by request (order flipped every other request), median of PASSES. The call is the one
select makes (tools.embed_texts): clauses -> encode_request_spans; one text under LONG_QUERY_CHARS -> encode([text])
(the query batcher's call); else encode_request. Wall ms and process CPU ms (every thread: the second half's too).

    .venv/bin/python results/selection/selectlat14/time_paths.py INT8.onnx [--first 500] [--passes 3] [--min-rows 0]
"""
import argparse, json, os, time
from pathlib import Path

import numpy as np

from edgeindex.bindings import onnx_query as oq
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans

parser = argparse.ArgumentParser()
parser.add_argument("int8", type=Path)
parser.add_argument("--first", type=int, default=500)
parser.add_argument("--passes", type=int, default=3)
parser.add_argument("--min-rows", type=int, default=0)
args = parser.parse_args()

e = local_embedder()
e.prepare_queries()
fp32 = e._queries
int8 = oq.OnnxQueryEncoder(e._model, args.int8)
int8.wide_session(); int8.second_session()
tok = e._model.tokenizer
queries = [json.loads(l)["query"] for l in open("/work/shared/data/tools-bfcl/queries.jsonl")][:args.first]


def call_of(q):
    parts = tl.segments(q)
    texts = [q, *(parts if len(parts) >= 2 else [])]
    clauses = clause_spans(q, tl.CLAUSE_MIN_TERMS)
    if clauses:
        return "spans", texts, clauses
    if len(texts) == 1 and len(q) < tl.LONG_QUERY_CHARS:
        return "single", texts, None
    return "request", texts, None


def run(enc, kind, texts, clauses):
    if kind == "spans":
        v, parts = enc.encode_request_spans(texts, clauses)
        return v, parts
    if kind == "single":
        return enc.encode(texts), []
    return enc.encode_request(texts), []


def rows(texts):
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return oq.padded_rows(lens, oq.length_buckets(lens))


calls = [call_of(q) for q in queries]
r = np.array([rows(c[1]) for c in calls])
keep = [i for i in range(len(calls)) if r[i] >= args.min_rows]
enc = {"fp32": fp32, "int8": int8}
for i in keep[:10]:
    for x in enc.values():
        run(x, *calls[i])
wall = {n: [[] for _ in keep] for n in enc}
cpu = {n: [[] for _ in keep] for n in enc}
cos_req, cos_clause = [], []
load = [os.getloadavg()[0]]
print(f"start {time.strftime('%H:%M:%S', time.gmtime())} load {load[0]:.2f}; {len(keep)} requests", flush=True)
for p in range(args.passes):
    for j, i in enumerate(keep):
        order = ["fp32", "int8"] if (j + p) % 2 == 0 else ["int8", "fp32"]
        out = {}
        for n in order:
            c, t = time.process_time(), time.perf_counter()
            out[n] = run(enc[n], *calls[i])
            wall[n][j].append((time.perf_counter() - t) * 1000)
            cpu[n][j].append((time.process_time() - c) * 1000)
        if p == 0:
            a, b = out["fp32"], out["int8"]
            cos_req.append(float(np.dot(a[0][0], b[0][0])))
            cos_clause += [float(np.dot(x, y)) for x, y in zip(a[1], b[1]) if x is not None]
    load.append(os.getloadavg()[0])
W = {n: np.array([np.median(v) for v in wall[n]]) for n in enc}
C = {n: np.array([np.median(v) for v in cpu[n]]) for n in enc}
rk = r[keep]
kinds = np.array([calls[i][0] for i in keep])
print(f"cosine int8 vs fp32: request mean {np.mean(cos_req):.4f} min {np.min(cos_req):.4f}; clauses "
      f"mean {np.mean(cos_clause) if cos_clause else float('nan'):.4f} (n={len(cos_clause)})")
for label, sel in (("all", rk >= 0), ("rows < 20", rk < 20), ("rows 20-29", (rk >= 20) & (rk < 30)),
                   ("rows 30-39", (rk >= 30) & (rk < 40)), ("rows 40+", rk >= 40),
                   ("single", kinds == "single"), ("request", kinds == "request"), ("spans", kinds == "spans")):
    if not sel.any():
        continue
    f = lambda d, n: f"p50 {np.percentile(d[n][sel], 50):6.2f} p99 {np.percentile(d[n][sel], 99):6.2f} mean {d[n][sel].mean():6.2f}"
    print(f"{label:11s} n={sel.sum():3d} wall fp32 {f(W, 'fp32')} | int8 {f(W, 'int8')} | ratio "
          f"{W['int8'][sel].mean() / W['fp32'][sel].mean():.3f}")
    print(f"{'':11s}       cpu  fp32 {f(C, 'fp32')} | int8 {f(C, 'int8')} | ratio "
          f"{C['int8'][sel].mean() / C['fp32'][sel].mean():.3f}")
print("the 10 slowest (fp32 wall): index rows kind texts clauses | fp32 wall cpu | int8 wall cpu")
for j in np.argsort(-W["fp32"])[:10]:
    i = keep[j]
    k, texts, cl = calls[i]
    print(f"  {i:4d} {rk[j]:4d} {k:7s} {len(texts)} {len(cl or [])} | {W['fp32'][j]:6.2f} {C['fp32'][j]:6.2f} | "
          f"{W['int8'][j]:6.2f} {C['int8'][j]:6.2f}  {queries[i][:70]!r}")
print(f"load during passes {' '.join(f'{x:.1f}' for x in load)}; end {time.strftime('%H:%M:%S', time.gmtime())}")
