"""Cosine of the quantized packed graphs' vectors to the fp32 packed graph (50 MS MARCO + 50 xquad-de queries),
and CPU per query in batches of 1 and 8, interleaved (three rounds).

  .venv/bin/python results/throughput/session20/nbits/nbits_eval.py packed_8b32a0 packed_8b32a4

Ran while the test suite ran on the other core (nbits_eval.txt)."""
import json, sys, time, resource, random
from pathlib import Path
import numpy as np
ROOT = Path("/work/main"); sys.path.insert(0, str(ROOT))
from shared.bindings.ai import LocalEmbedder
from shared.bindings import onnx_query
from shared.bindings.packed_query import PackedQueries
emb = LocalEmbedder(); emb.prepare_queries(); enc = emb._queries
texts = [json.loads(l)["text"] for l in open(ROOT.parent / "shared/data/msmarco/queries.jsonl")]
de = [json.loads(l)["text"] for l in open(ROOT.parent / "shared/data/xquad-de/queries.jsonl")][:50]
arms = {"fp32": enc.packed}
for name in sys.argv[1:]:
    p = PackedQueries.__new__(PackedQueries); p.path = name; p._tokenize = enc._tokenize
    p._session = onnx_query._session(Path(f"/tmp/s20/{name}.onnx"), threads=int(__import__('os').environ.get("T", "2")))
    arms[name] = p
ref = enc.packed.encode(texts + de)
for name, p in arms.items():
    got = p.encode(texts + de)
    cos = (got * ref).sum(1)
    print(name, "min cosine", cos.min(), "median", np.median(cos))
def cpu(): r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
for size in (1, 8):
    random.seed(size); batches = [random.sample(texts, size) for _ in range(30)]
    for rnd in range(3):
        for name, p in arms.items():
            c0 = cpu(); w0 = time.perf_counter()
            for b in batches: p.encode(b)
            print(size, rnd, name, f"CPU/query {(cpu()-c0)/(30*size)*1000:.2f}  wall/batch {(time.perf_counter()-w0)/30*1000:.2f}", flush=True)
