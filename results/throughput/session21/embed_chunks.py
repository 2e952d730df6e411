"""Embed load_search's 12,000 synthetic chunk texts and its 50 queries with the real model (lab input)."""
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, "scripts")
import load_search
from edgeindex.evaluation import loader
from edgeindex.bindings.ai import local_embedder

texts = loader.read_passages(load_search.DATA / "corpus.jsonl")
chunks = [c for d in loader.synthetic_documents(texts, 12000) for c in d.chunks]
queries = [json.loads(l)["text"] for l in open(load_search.DATA / "queries.jsonl", encoding="utf-8")]
emb = local_embedder()
t = time.perf_counter()
out = []
for i in range(0, len(chunks), 256):
    out.append(emb.encode_sync(chunks[i:i + 256]))
    print(i, f"{time.perf_counter() - t:.0f}s", flush=True)
np.save("/tmp/s21/chunk_vectors.npy", np.vstack(out).astype(np.float32))
q = np.vstack([emb.encode_query_sync(x) for x in queries]).astype(np.float32)
np.save("/tmp/s21/query_vectors.npy", q)
print("done", len(chunks), f"{time.perf_counter() - t:.0f}s")
