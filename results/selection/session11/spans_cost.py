"""What the sentences' own embeddings cost a select: the real query encoder (OnnxQueryEncoder.encode_request,
as select calls it) on every tools-bfcl request that select splits into sentences, the request with its
sentences (today) against the request alone (what span pooling would embed), alternating request by
request, 3 passes, each request's median; ms. Run under the bench lock:
  flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/session11/spans_cost.py"""
import json, sys, time
import numpy as np
sys.path.insert(0, "scripts")
from edgeindex.bindings.ai import local_embedder
from edgeindex.search.service import prepare_query_embedding
from edgeindex.selection import tools as tl

emb = local_embedder(); prepare_query_embedding(emb); enc = emb._queries
qs = [json.loads(l)["query"] for l in open("../shared/data/tools-bfcl/queries.jsonl")]
multi = [(q, tl.segments(q)) for q in qs if len(tl.segments(q)) >= 2]
for q, s in multi[:5]: enc.encode_request([q, *s]); enc.encode_request([q])   # warm both sessions
times = {"with_sentences": [[] for _ in multi], "request_only": [[] for _ in multi]}
for _ in range(3):
    for n, (q, s) in enumerate(multi):
        for name, texts in (("with_sentences", [q, *s]), ("request_only", [q])):
            t = time.perf_counter(); enc.encode_request(texts); times[name][n].append((time.perf_counter() - t) * 1000)
print(len(multi), "multi-sentence requests of", len(qs))
for name, v in times.items():
    med = np.array([np.median(x) for x in v])
    print(f"{name:15s} p50 {np.percentile(med, 50):6.2f}  p90 {np.percentile(med, 90):6.2f}  p99 {np.percentile(med, 99):6.2f}  mean {med.mean():6.2f} ms")
