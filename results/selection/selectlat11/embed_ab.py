"""A select's query embedding on the bench's 500 requests, main's texts (sentences of 3+ terms scored alone)
against this branch's (6+ terms), alternating request by request, median of N passes, in one process: the
same-load figure for what SEGMENT_MIN_TERMS changes (the full bench's p99 is the 5th-worst request of 500 and
moves with the machine's load as much).

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/selectlat11/embed_ab.py [--passes 3]
"""
import argparse, json, os, time
from pathlib import Path
import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.search.service import prepare_query_embedding
from edgeindex.selection import tools as tl

parser = argparse.ArgumentParser()
parser.add_argument("--passes", type=int, default=3)
args = parser.parse_args()
emb = local_embedder()
prepare_query_embedding(emb)
enc = emb._queries
qs = [json.loads(l)["query"] for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()][:500]


def texts_for(query, min_terms):
    tl.SEGMENT_MIN_TERMS = min_terms
    parts = tl.segments(query)
    return [query, *parts] if len(parts) >= 2 else [query]


def embed(texts):
    # as tools.embed_texts does with the local embedder: a short single request alone, else encode_request
    mark = time.perf_counter()
    if len(texts) == 1 and len(texts[0]) < tl.LONG_QUERY_CHARS:
        enc.encode([texts[0]])
    else:
        enc.encode_request(texts)
    return (time.perf_counter() - mark) * 1000


pairs = [(texts_for(q, 3), texts_for(q, 6)) for q in qs]
for a, b in pairs[:20]:
    embed(a); embed(b)
main, branch = [], []
load = [os.getloadavg()[0]]
for a, b in pairs:
    ta, tb = [], []
    for _ in range(args.passes):
        ta.append(embed(a)); tb.append(embed(b))
    main.append(np.median(ta)); branch.append(np.median(tb))
load.append(os.getloadavg()[0])
changed = [i for i, (a, b) in enumerate(pairs) if a != b]
print(f"500 bench requests, median of {args.passes} alternating passes, load {load[0]:.1f} -> {load[1]:.1f}")
for name, values in (("main (3+ terms)", main), ("branch (6+ terms)", branch)):
    v = np.asarray(values)
    print(f"{name:18s} p50 {np.percentile(v, 50):6.2f}  p99 {np.percentile(v, 99):6.2f}  mean {v.mean():6.2f}  "
          f"max {v.max():6.2f}  changed requests (n={len(changed)}) mean {v[changed].mean():6.2f}")
