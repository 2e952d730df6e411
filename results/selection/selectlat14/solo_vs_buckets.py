"""The int8 graph (quantize.py) on select's long calls: main's call structure (length buckets with padding, halves)
against one text per call inside each half (what a deterministic int8 path needs: a text's vector must not depend on
its batch-mates), alternating request by request, median of PASSES, process CPU and wall.
    .venv/bin/python results/selection/selectlat14/solo_vs_buckets.py INT8.onnx [--min-rows 100] [--passes 2]"""
import argparse, json, os, time
from pathlib import Path
import numpy as np
from edgeindex.bindings import onnx_query as oq
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans

parser = argparse.ArgumentParser()
parser.add_argument("int8", type=Path)
parser.add_argument("--min-rows", type=int, default=100)
parser.add_argument("--passes", type=int, default=2)
args = parser.parse_args()
e = local_embedder()
e.prepare_queries()
enc = oq.OnnxQueryEncoder(e._model, args.int8)
enc.wide_session(); enc.second_session()
tok = e._model.tokenizer
buckets = oq.length_buckets
solo = lambda lengths: [[i] for i in range(len(lengths))]
calls = []
for q in (json.loads(l)["query"] for l in open("/work/shared/data/tools-bfcl/queries.jsonl")):
    parts = tl.segments(q)
    texts = [q, *(parts if len(parts) >= 2 else [])]
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    if len(texts) > 1 and oq.padded_rows(lens, buckets(lens)) >= args.min_rows:
        calls.append((texts, clause_spans(q, tl.CLAUSE_MIN_TERMS)))
times = {n: [[] for _ in calls] for n in ("buckets", "solo")}
cpu = {n: [[] for _ in calls] for n in ("buckets", "solo")}
print(f"start {time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.2f}; {len(calls)} several-text calls", flush=True)
for p in range(args.passes):
    for j, (texts, spans) in enumerate(calls):
        for n in (("buckets", "solo") if (j + p) % 2 == 0 else ("solo", "buckets")):
            oq.length_buckets = buckets if n == "buckets" else solo
            c, t = time.process_time(), time.perf_counter()
            enc.encode_request_spans(texts, spans)
            times[n][j].append((time.perf_counter() - t) * 1000)
            cpu[n][j].append((time.process_time() - c) * 1000)
oq.length_buckets = buckets
for n in times:
    w = np.array([np.median(v) for v in times[n]]); c = np.array([np.median(v) for v in cpu[n]])
    print(f"{n:8s} wall p50 {np.percentile(w, 50):7.2f} p99 {np.percentile(w, 99):7.2f} mean {w.mean():7.2f} | "
          f"cpu p50 {np.percentile(c, 50):7.2f} p99 {np.percentile(c, 99):7.2f} mean {c.mean():7.2f}")
print(f"end {time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.2f}")
