import json
from pathlib import Path
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.onnx_query import padded_rows
from edgeindex.selection import tools as tl
from edgeindex.evaluation.selection_split import split_of
tok = local_embedder()._model.tokenizer
qs = [json.loads(l) for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()]
for cut in (50, 60, 70):
    hit = {"tune": 0, "held_out": 0}; first500 = 0
    for n, q in enumerate(qs):
        parts = tl.segments(q["query"])
        if len(parts) < 2: continue
        lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in [q["query"], *parts]]
        if padded_rows(lens) > cut:
            hit[split_of(q["id"])] += 1; first500 += n < 500
    print(cut, hit, "first 500:", first500)
multi = sum(len(tl.segments(q["query"])) >= 2 for q in qs); print("multi-sentence of 1000:", multi)
