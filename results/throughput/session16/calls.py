"""Model CPU per passage: ONNX batches of 8, in calls of N texts (the pipeline's ~40 vs the bench's raw 256)."""
import json, sys, time
sys.path.insert(0, "/work/main")
import numpy as np
from shared.bindings.ai import LocalEmbedder
emb = LocalEmbedder(batch_size=8)
emb.set_threads(1)
emb.run_batches_on("onnx")
texts = []
for line in open("/work/shared/data/msmarco/corpus.jsonl"):
    r = json.loads(line); texts.append((r.get("title", "") + "\n\n" + r["text"]).strip())
    if len(texts) >= 1536: break
emb.encode_sync(texts[:64])
for rnd in range(2):
    for call in (8, 16, 40, 64, 128, 256, 512):
        t = time.thread_time()
        for i in range(0, len(texts), call):
            emb.encode_sync(texts[i:i+call])
        print(f"round {rnd} calls of {call:4}: {1000*(time.thread_time()-t)/len(texts):.2f} ms CPU/text", flush=True)
