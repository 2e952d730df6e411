import json, sys, time
sys.path.insert(0, "/work/main")
import numpy as np, onnxruntime
from shared.bindings.ai import LocalEmbedder
from shared.bindings import onnx_query
emb = LocalEmbedder(); emb.prepare_queries()
enc = emb._queries
q = [json.loads(l)["text"] for l in open("/work/shared/data/msmarco/queries.jsonl")][:50] * 4
def make(**kw):
    o = onnxruntime.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
    o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for k, v in kw.items(): setattr(o, k, v)
    return onnxruntime.InferenceSession(str(enc.path), o, providers=["CPUExecutionProvider"])
tok = enc._tokenizer
feeds1 = [{n: tok([t], return_tensors="np", padding=True, truncation=True, max_length=256)[n].astype(np.int64) for n in onnx_query.INPUTS} for t in q]
t = time.thread_time()
for x in q: tok([x], return_tensors="np", padding=True, truncation=True, max_length=256)
print(f"tokenizer alone: {1000*(time.thread_time()-t)/len(q):.3f} ms/query")
for label, kw in (("default", {}), ("no mem pattern", {"enable_mem_pattern": False}), ("no arena", {"enable_cpu_mem_arena": False})):
    s = make(**kw)
    for f in feeds1[:20]: s.run([onnx_query.OUTPUT], f)
    for rnd in range(2):
        t = time.thread_time()
        for f in feeds1: s.run([onnx_query.OUTPUT], f)
        print(f"{label:15} r{rnd} run batch 1: {1000*(time.thread_time()-t)/len(q):.3f} ms/query", flush=True)
