"""Each quantized graph against the fp32 fused graph: cosine of the vectors and time per call, one text per
call, one thread, on the first N BFCL requests (the whole request; models alternate request by request).

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/session9/int8_closeness.py A.onnx B.onnx ...
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime

from edgeindex.bindings import onnx_query
from edgeindex.bindings.ai import local_embedder


def session(path):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


emb = local_embedder()
emb.prepare_queries()
tok = emb._model.tokenizer
paths = {"fp32": emb._queries.path, **{Path(p).stem: p for p in sys.argv[1:]}}
sessions = {k: session(p) for k, p in paths.items()}
queries = [json.loads(l)["query"] for l in Path("../shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()[:300]]
feeds = []
for q in queries:
    b = tok([q], return_tensors="np", truncation=True, max_length=emb.max_tokens)
    feeds.append({n: b[n].astype(np.int64) for n in onnx_query.INPUTS})
vec = {k: [] for k in sessions}
ms = {k: [] for k in sessions}
names = list(sessions)
for i, f in enumerate(feeds):
    for k in (names if i % 2 else names[::-1]):
        m = time.perf_counter()
        vec[k].append(sessions[k].run([onnx_query.OUTPUT], f)[0][0])
        ms[k].append((time.perf_counter() - m) * 1000)
ref = np.vstack(vec["fp32"])
for k in names:
    v = np.vstack(vec[k])
    cos = (v * ref).sum(1)
    print(f"{k:8s} ms p50 {np.percentile(ms[k], 50):6.2f} p99 {np.percentile(ms[k], 99):6.2f} mean {np.mean(ms[k]):6.2f}"
          f"  cos to fp32 mean {cos.mean():.5f} min {cos.min():.5f}")
print(f"load {os.getloadavg()[0]:.1f}")
