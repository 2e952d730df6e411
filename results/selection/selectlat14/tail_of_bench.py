"""The slowest requests of a bench_select.py --per-query run: padded token rows of select's call, sentences scored
alone, clauses, and the server's stage times.
    .venv/bin/python results/selection/selectlat14/tail_of_bench.py PER_QUERY.jsonl [N]"""
import json, sys
import numpy as np
from edgeindex.bindings import onnx_query as oq
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans

rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
tok = local_embedder()._model.tokenizer
sdk = np.array([r["sdk_ms"] for r in rows])
print(f"{len(rows)} requests: SDK p50 {np.percentile(sdk, 50):.2f} p99 {np.percentile(sdk, 99):.2f}; "
      f"the p99 lies between the {len(rows) - int(0.99 * (len(rows) - 1))}th and the next slowest")
print("rank sdk_ms took_ms embed_ms score_ms catalogue_ms | rows texts clauses | query")
for rank, i in enumerate(np.argsort(-sdk)[:n], 1):
    r = rows[i]
    parts = tl.segments(r["query"])
    texts = [r["query"], *(parts if len(parts) >= 2 else [])]
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    print(f"{rank:2d} {r['sdk_ms']:7.2f} {r['took_ms']:7.2f} {r.get('embed_ms', 0):7.2f} {r.get('score_ms', 0):6.2f} "
          f"{r.get('catalogue_ms', 0):6.2f} | {oq.padded_rows(lens, oq.length_buckets(lens)):4d} {len(texts)} "
          f"{len(clause_spans(r['query'], tl.CLAUSE_MIN_TERMS))} | {r['query'][:60]!r}")
