"""What each select request costs the query encoder: token rows and ms, one thread against two.

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/session8/latency/embed_tail.py [--queries 300]

The texts are what a select embeds (the request, and its sentences when it has two or more), through
OnnxQueryEncoder.encode_request with WIDE_MIN_ROWS forced off (one thread) and on (two threads),
alternating request by request, 3 passes. Prints per-request rows and the two medians, and the
aggregate per row-count band.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from edgeindex.bindings import onnx_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection.tools import segments


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = Path("../shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()[:args.queries]
    queries = [json.loads(line)["query"] for line in lines]
    embedder = local_embedder()
    embedder.prepare_queries()
    enc = embedder._queries
    tok = enc._tokenizer
    rows_of, times = [], {1: [[] for _ in queries], 2: [[] for _ in queries]}
    texts_of = []
    for q in queries:
        parts = segments(q)
        texts = [q, *(parts if len(parts) >= 2 else [])]
        texts_of.append(texts)
        ids = [len(r) for r in tok(texts, truncation=True, max_length=enc._max_tokens)["input_ids"]]
        groups = onnx_query.length_buckets(ids)
        rows_of.append(sum(len(g) * max(ids[i] for i in g) for g in groups))
    for texts in texts_of[:20]:
        enc.encode_request(texts)
    for p in range(args.passes):
        for i, texts in enumerate(texts_of):
            for threads in ((1, 2) if (i + p) % 2 == 0 else (2, 1)):
                onnx_query.WIDE_MIN_ROWS = 1 if threads == 2 else 10**9
                mark = time.perf_counter()
                enc.encode_request(texts)
                times[threads][i].append((time.perf_counter() - mark) * 1000)
    med = {t: [float(np.median(v)) for v in times[t]] for t in times}
    order = sorted(range(len(queries)), key=lambda i: -med[1][i])
    print("slowest on one thread: rows, texts, 1-thread ms, 2-thread ms, chars")
    for i in order[:15]:
        print(f"{rows_of[i]:4d} {len(texts_of[i]):2d} {med[1][i]:7.2f} {med[2][i]:7.2f} {len(queries[i]):4d}")
    for lo, hi in ((0, 20), (20, 30), (30, 40), (40, 60), (60, 1000)):
        sel = [i for i in range(len(queries)) if lo <= rows_of[i] < hi]
        if sel:
            print(f"rows [{lo},{hi}): n={len(sel):3d}  1-thread mean {np.mean([med[1][i] for i in sel]):6.2f}  "
                  f"2-thread mean {np.mean([med[2][i] for i in sel]):6.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.out:
        args.out.write_text("".join(json.dumps({"query": q, "rows": r, "one_ms": a, "two_ms": b}) + "\n"
                                    for q, r, a, b in zip(queries, rows_of, med[1], med[2])))


if __name__ == "__main__":
    main()
