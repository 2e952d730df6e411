"""Padded token rows of a select's embedding call, over all 1,000 tools-bfcl requests (the eval's) against the
bench's first 500: request + sentences scored alone, in select's length buckets."""
import json
from pathlib import Path
import numpy as np
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans
from edgeindex.bindings.onnx_query import length_buckets
from edgeindex.bindings.ai import local_embedder

tok = local_embedder()._model.tokenizer
qs = [json.loads(l)["query"] for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()]


def rows(texts):
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens)), lens


out = []
for q in qs:
    parts = tl.segments(q)
    parts = parts if len(parts) >= 2 else []
    r, lens = rows([q, *parts])
    out.append((r, lens[0], len(parts), len(clause_spans(q, tl.CLAUSE_MIN_TERMS))))
a = np.array(out)
for name, sl in (("bench's first 500", slice(0, 500)), ("all 1000 (eval)", slice(0, 1000))):
    b = a[sl]
    print(f"{name}: per-sentence {int((b[:, 2] >= 2).sum())}, with clauses {int((b[:, 3] > 0).sum())}; "
          f"padded rows p50 {np.percentile(b[:, 0], 50):.0f} p90 {np.percentile(b[:, 0], 90):.0f} "
          f"p99 {np.percentile(b[:, 0], 99):.0f} max {b[:, 0].max()}; whole request tokens p50 "
          f"{np.percentile(b[:, 1], 50):.0f} p99 {np.percentile(b[:, 1], 99):.0f} max {b[:, 1].max()}; "
          f"rows >= 40: {int((b[:, 0] >= 40).sum())}, >= 100: {int((b[:, 0] >= 100).sum())}, >= 200: {int((b[:, 0] >= 200).sum())}")
print("15 largest (rows, request tokens, sentences, clauses):")
for i in np.argsort(-a[:, 0])[:15]:
    print(i, a[i].tolist(), qs[i][:90])
