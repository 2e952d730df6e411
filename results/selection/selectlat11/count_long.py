"""How many of tools-bfcl's 1,000 requests (per half) each variant touches: multi-sentence requests padding to
more than N rows (whole vector from sentences, dropped), and the requests scored per sentence at each
SEGMENT_MIN_TERMS."""
import json
from pathlib import Path
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.onnx_query import length_buckets
from edgeindex.selection import tools as tl
from edgeindex.evaluation.selection_split import split_of

tok = local_embedder()._model.tokenizer
qs = [json.loads(l) for l in Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()]


def padded_rows(texts):
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return sum(len(g) * max(lens[i] for i in g) for g in length_buckets(lens))


tl.SEGMENT_MIN_TERMS = 3
for cut in (50, 60, 70):
    hit = {"tune": 0, "held_out": 0}
    for q in qs:
        parts = tl.segments(q["query"])
        if len(parts) >= 2 and padded_rows([q["query"], *parts]) > cut:
            hit[split_of(q["id"])] += 1
    print(f"multi-sentence requests over {cut} rows: {hit}")
for t in (3, 4, 5, 6, 7):
    tl.SEGMENT_MIN_TERMS = t
    multi = {"tune": 0, "held_out": 0}
    for q in qs:
        if len(tl.segments(q["query"])) >= 2:
            multi[split_of(q["id"])] += 1
    print(f"SEGMENT_MIN_TERMS {t}: requests scored per sentence {multi}")
