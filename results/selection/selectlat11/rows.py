"""Token rows a select's embedding costs on the bench requests (the first 500 of tools-bfcl), per variant."""
import json, sys
from pathlib import Path
import numpy as np
from edgeindex.selection import tools as tl
from edgeindex.bindings.onnx_query import length_buckets
from transformers import AutoTokenizer
from edgeindex.bindings.ai import local_embedder

if len(sys.argv) > 1:   # SEGMENT_MIN_TERMS to count with
    tl.SEGMENT_MIN_TERMS = int(sys.argv[1])
print("SEGMENT_MIN_TERMS", tl.SEGMENT_MIN_TERMS)
emb = local_embedder()
tok = emb._model.tokenizer
qs = [json.loads(l)["query"] for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()][:500]

def rows(texts):
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens)), lens

out = []
for q in qs:
    parts = tl.segments(q)
    parts = parts if len(parts) >= 2 else []
    main_rows, lens = rows([q, *parts])
    sent_rows = rows(parts)[0] if parts else main_rows
    out.append((main_rows, sent_rows, lens[0], len(parts)))
a = np.array(out)
multi = a[:, 3] >= 2
print("requests", len(a), "multi-sentence", int(multi.sum()))
print("rows main: p50 %.0f p90 %.0f p98 %.0f p99 %.0f max %d" % (*np.percentile(a[:,0],[50,90,98,99]), a[:,0].max()))
print("rows sentences-only: p50 %.0f p90 %.0f p98 %.0f p99 %.0f max %d" % (*np.percentile(a[:,1],[50,90,98,99]), a[:,1].max()))
print("whole tokens p50 %.0f p99 %.0f max %d" % (*np.percentile(a[:,2],[50,99]), a[:,2].max()))
print("multi: rows main mean %.1f, sentences-only mean %.1f" % (a[multi,0].mean(), a[multi,1].mean()))
big = np.argsort(-a[:,0])[:15]
for i in big: print(a[i].tolist(), qs[i][:100])
