import json, sys, time
sys.path.insert(0, "/work/main")
from shared.bindings.ai import LocalEmbedder
emb = LocalEmbedder(batch_size=8); emb.set_threads(1); emb.run_batches_on("onnx")
texts = []
for line in open("/work/shared/data/msmarco/corpus.jsonl"):
    r = json.loads(line); texts.append((r.get("title", "") + "\n\n" + r["text"]).strip())
    if len(texts) >= 1024: break
emb.encode_sync(texts[:64])
for rnd in range(2):
    for call in (40, 256):
        for b in (1, 2, 4, 8, 16):
            emb.set_batch_size(b)
            t = time.thread_time()
            for i in range(0, len(texts), call):
                emb.encode_sync(texts[i:i+call])
            print(f"round {rnd} calls {call:4} batch {b:2}: {1000*(time.thread_time()-t)/len(texts):.2f} ms CPU/text", flush=True)
