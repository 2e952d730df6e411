import json, sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from shared.bindings.ai import LocalEmbedder
from shared.bindings import onnx_query
emb = LocalEmbedder(batch_size=8); emb.set_threads(1); emb.run_batches_on("onnx")
enc = emb._batches
p = []
for line in open("/work/shared/data/msmarco/corpus.jsonl"):
    r = json.loads(line); p.append((r.get("title", "") + "\n\n" + r["text"]).strip())
    if len(p) >= 600: break
words = " ".join(p).split()
sets = {"msmarco": p, "short": [json.loads(l)["text"] for l in open("/work/shared/data/xquad-de/queries.jsonl")][:600],
        "long200": [" ".join(words[i:i+150]) for i in range(0, 150*200, 150)]}
real = onnx_query.padded_batches
fixed = lambda lengths, b, **k: (lambda o: [o[s:s+b] for s in range(0, len(o), b)])(sorted(range(len(lengths)), key=lambda i: lengths[i]))
enc.encode_batches(p[:64], 8)
# same vectors whatever the cut
a = enc.encode_batches(p[:200], 8); onnx_query.padded_batches = fixed; b = enc.encode_batches(p[:200], 8); onnx_query.padded_batches = real
print("max diff between cuts", float(np.abs(a - b).max()))
for rnd in range(2):
    for name, texts in sets.items():
        line = []
        for label, fn in (("fixed8", fixed), ("padded_batches", real)):
            onnx_query.padded_batches = fn
            t = time.thread_time()
            for i in range(0, len(texts), 40):
                enc.encode_batches(texts[i:i+40], 8)
            line.append(f"{label} {1000*(time.thread_time()-t)/len(texts):6.2f}")
        onnx_query.padded_batches = real
        print(f"r{rnd} {name:8} calls of 40: " + "  ".join(line), flush=True)
