"""CPU per search query: fp32 graph in batches (the QueryBatcher's) vs the int8 mid4 graph solo; and cosines."""
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, "/work/main")
from shared.bindings.ai import LocalEmbedder
from shared.bindings import quantized_query

emb = LocalEmbedder()
emb.prepare_queries()
fp32 = emb._queries
int8 = quantized_query.load(emb._model, fp32)
data = Path("/work/shared/data")
def queries(name, n=400):
    return [json.loads(l)["text"] for l in open(data / name / "queries.jsonl")][:n]
for name in ("msmarco", "business-reports", "xquad-de", "xquad-zh"):
    q = queries(name)
    a = np.concatenate([fp32.encode([t]) for t in q]); b = int8.encode(q)
    cos = (a * b).sum(1)
    print(f"{name:18} n {len(q):4}  cosine int8/fp32 min {cos.min():.4f} p1 {np.percentile(cos,1):.4f} mean {cos.mean():.4f}")
q = queries("msmarco", 400)
def cpu(fn, texts, size):
    best = []
    for _ in range(3):
        t = time.thread_time()
        for i in range(0, len(texts), size):
            fn(texts[i:i+size])
        best.append((time.thread_time() - t) / len(texts) * 1000)
    return min(best), float(np.median(best))
for size in (1, 2, 4, 8):
    print(f"fp32 batch {size}: ms CPU/query min {cpu(fp32.encode, q, size)[0]:.3f} median {cpu(fp32.encode, q, size)[1]:.3f}")
print(f"int8 solo      : ms CPU/query min/median {cpu(int8.encode, q, 1)}")
print(f"int8 solo (b8) : ms CPU/query min/median {cpu(int8.encode, q, 8)}")
