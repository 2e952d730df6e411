import json, sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from shared.bindings.ai import LocalEmbedder
from shared.bindings import onnx_query
emb = LocalEmbedder(batch_size=8); emb.set_threads(1); emb.run_batches_on("onnx")
enc = emb._batches
tok = emb._model.tokenizer

def dp_groups(lengths, max_batch, overhead):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    L = [lengths[i] for i in order]; n = len(L)
    cost = [0.0] + [float("inf")] * n; back = [0] * (n + 1)
    for i in range(1, n + 1):
        for j in range(max(0, i - max_batch), i):
            c = cost[j] + overhead + (i - j) * L[i - 1]
            if c < cost[i]: cost[i], back[i] = c, j
    groups, i = [], n
    while i > 0:
        groups.append(order[back[i]:i]); i = back[i]
    return groups[::-1]

def run(texts, grouping):
    encoded = tok(texts, truncation=True, max_length=enc._max_tokens)
    ids = [np.asarray(r, dtype=np.int64) for r in encoded["input_ids"]]
    types = [np.asarray(r, dtype=np.int64) for r in encoded["token_type_ids"]]
    for g in grouping([len(x) for x in ids]):
        enc._batch_session.run([onnx_query.OUTPUT], enc._padded_feeds(ids, types, g))

def fixed(b):
    def f(lengths):
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        return [order[s:s+b] for s in range(0, len(order), b)]
    return f

sets = {}
p = []
for line in open("/work/shared/data/msmarco/corpus.jsonl"):
    r = json.loads(line); p.append((r.get("title", "") + "\n\n" + r["text"]).strip())
    if len(p) >= 800: break
sets["msmarco"] = p
sets["short"] = [json.loads(l)["text"] for l in open("/work/shared/data/xquad-de/queries.jsonl")][:800]
words = " ".join(p).split()
sets["long200"] = [" ".join(words[i:i+150]) for i in range(0, 150*400, 150)]
opts = {"fixed8": fixed(8), "fixed2": fixed(2), "fixed1": fixed(1),
        "dp8_o0": lambda l: dp_groups(l, 8, 0), "dp8_o16": lambda l: dp_groups(l, 8, 16), "dp16_o32": lambda l: dp_groups(l, 16, 32)}
run(p[:64], fixed(8))
for rnd in range(2):
    for name, texts in sets.items():
        for call in (40, 256):
            line = []
            for o, g in opts.items():
                t = time.thread_time()
                for i in range(0, len(texts), call):
                    run(texts[i:i+call], g)
                line.append(f"{o} {1000*(time.thread_time()-t)/len(texts):6.2f}")
            print(f"r{rnd} {name:8} call {call:3}: " + "  ".join(line), flush=True)
