"""CPU per passage: torch (sentence-transformers, 1 thread, batches of 8 sorted by length) against the
fused ONNX Runtime graph (1 thread, the same batches), in calls of N texts, alternated rounds."""
import json, sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.onnx_query import OnnxQueryEncoder, _session, INPUTS, OUTPUT
texts = []
with open("/work/shared/data/msmarco/corpus.jsonl") as f:
    for i, line in enumerate(f):
        if i >= 400: break
        r = json.loads(line); texts.append((r.get("title", "") + "\n\n" + r["text"]).strip())
m = local_embedder(8); m.set_threads(1)
enc = OnnxQueryEncoder.load(m._model, m.model_dir)
sess = _session(enc.path, threads=1)
tok = m._model.tokenizer
def ort(call):
    order = sorted(range(len(call)), key=lambda i: -len(call[i]))
    out = np.zeros((len(call), 384), np.float32)
    for s in range(0, len(order), 8):
        idx = order[s:s+8]
        b = tok([call[i] for i in idx], return_tensors="np", padding=True, truncation=True, max_length=256)
        out[idx] = sess.run([OUTPUT], {n: b[n].astype(np.int64) for n in INPUTS})[0]
    return out
def torch_(call):
    return m.encode_sync(call)
a, b = torch_(texts[:16]), ort(texts[:16])
print("max diff", float(np.abs(a - b).max()))
call = int(sys.argv[1]) if len(sys.argv) > 1 else 53
for rnd in range(3):
    for name, fn in (("torch", torch_), ("ort", ort)):
        c, w = time.process_time(), time.perf_counter()
        for s in range(0, len(texts), call):
            fn(texts[s:s+call])
        print(f"round {rnd} {name}: CPU {1000*(time.process_time()-c)/len(texts):.1f} ms/text, wall {1000*(time.perf_counter()-w)/len(texts):.1f}", flush=True)
