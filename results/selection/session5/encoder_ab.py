"""Plain (dynamo) vs fused query encoder, in one process, alternating query by query."""
import json, sys, time, logging, numpy as np
from pathlib import Path
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings import onnx_query as oq
from edgeindex.selection.tools import segments, LONG_QUERY_CHARS
emb = local_embedder()
model = emb._model
plain_dir = Path("/tmp/selq4/plain"); fused_dir = Path("/tmp/selq4/cache1/onnx")
if not (plain_dir / "model.onnx").exists():
    plain_dir.mkdir(parents=True, exist_ok=True); oq._export_dynamo(model, plain_dir)
fused_path = next(fused_dir.glob("*/model.onnx"))
A = oq.OnnxQueryEncoder(model, plain_dir / "model.onnx"); B = oq.OnnxQueryEncoder(model, fused_path)
A.wide_session(); B.wide_session()
search = [json.loads(l)["text"] for l in open("/work/shared/data/msmarco/queries.jsonl")][:int(sys.argv[1])]
tools = [json.loads(l)["query"] for l in open("/work/shared/data/tools-bfcl/queries.jsonl")][:int(sys.argv[2])]
def req(q):
    parts = segments(q); return [q] + parts if len(parts) > 1 else [q]
for name, qs, call in [("search single", search, lambda e, q: e.encode([q])),
                       ("select request", tools, lambda e, q: e.encode_request(req(q)))]:
    ta, tb, diff = [], [], 0.0
    for q in qs[:20]: call(A, q); call(B, q)
    for rep in range(2):
        for q in qs:
            order = [(A, ta), (B, tb)] if rep == 0 else [(B, tb), (A, ta)]
            outs = []
            for enc, ts in order:
                t = time.perf_counter(); outs.append(call(enc, q)); ts.append((time.perf_counter() - t) * 1000)
            diff = max(diff, float(np.abs(outs[0] - outs[1]).max()))
    for label, ts in (("plain", ta), ("fused", tb)):
        ts = np.array(ts); print(f"{name:15s} {label}: n={len(ts)} mean {ts.mean():.2f} p50 {np.percentile(ts,50):.2f} p90 {np.percentile(ts,90):.2f} p99 {np.percentile(ts,99):.2f} ms")
    print(f"{name}: mean ratio fused/plain {np.mean(tb)/np.mean(ta):.3f}, largest vector difference {diff:.1e}")
