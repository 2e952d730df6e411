"""Same vectors, fewer padded rows: a select's texts (request + sentences) embedded as main does (at most two
length buckets) against one call per text (no padding at all), on the bench's requests of 30+ padded rows,
alternating request by request, median of N passes; ms per request and the largest vector difference.

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/selectlat11/buckets.py [--passes 5]
"""
import argparse, json, os, time
from pathlib import Path
import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.onnx_query import length_buckets
from edgeindex.search.service import prepare_query_embedding
from edgeindex.selection import tools as tl

parser = argparse.ArgumentParser()
parser.add_argument("--passes", type=int, default=5)
parser.add_argument("--min-rows", type=int, default=30)
args = parser.parse_args()
emb = local_embedder()
prepare_query_embedding(emb)
enc = emb._queries
tok = emb._model.tokenizer
qs = [json.loads(l)["query"] for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()][:500]
requests = []
for q in qs:
    parts = tl.segments(q)
    texts = [q, *parts] if len(parts) >= 2 else [q]
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    rows = sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens))
    if rows >= args.min_rows:
        requests.append((texts, rows, sum(lens)))


def separate(texts):
    return np.vstack([enc.encode_request([t]) for t in texts])


def timed(fn, texts):
    mark = time.perf_counter()
    out = fn(texts)
    return (time.perf_counter() - mark) * 1000, out


for texts, _, _ in requests[:3]:
    enc.encode_request(texts); separate(texts)
times = {"main": [], "separate": []}
diff = 0.0
for texts, rows, total in requests:
    a, b = [], []
    for _ in range(args.passes):
        ta, va = timed(enc.encode_request, texts)
        tb, vb = timed(separate, texts)
        a.append(ta); b.append(tb)
        diff = max(diff, float(np.abs(va - vb).max()))
    times["main"].append(np.median(a)); times["separate"].append(np.median(b))
    print(f"{rows:4d} rows padded / {total:4d} unpadded, {len(texts)} texts: main {np.median(a):6.2f} ms, "
          f"separate {np.median(b):6.2f} ms")
print(f"{len(requests)} requests of {args.min_rows}+ rows, load {os.getloadavg()[0]:.1f}; largest vector difference {diff:.1e}")
for name, values in times.items():
    print(f"{name:9s} mean {np.mean(values):6.2f}  p50 {np.median(values):6.2f}  max {np.max(values):6.2f}")
multi = [i for i, r in enumerate(requests) if len(r[0]) > 1]
for name, values in times.items():
    print(f"{name:9s} multi-sentence (n={len(multi)}) mean {np.mean([values[i] for i in multi]):6.2f}")
