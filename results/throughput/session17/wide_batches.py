"""Query batches on the one-thread session against the two-thread (wide) one: wall and CPU per query.

  .venv/bin/python results/throughput/session17/wide_batches.py

A semantic hit with one search process is bound by the one model thread (results/throughput, sixteenth
session) while the other core has room: would a batch's run on two intra-op threads finish sooner,
and at what CPU?"""
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from shared.bindings.ai import LocalEmbedder  # noqa: E402

emb = LocalEmbedder()
emb.prepare_queries()
encoder = emb._queries
texts = [json.loads(line)["text"] + " please" for line in open(ROOT.parent / "shared/data/msmarco/queries.jsonl")][:400]
wide = encoder.wide_session()


def run(session, batch):
    feeds = encoder._tokenize(batch, return_tensors="np", padding=True)
    return session.run(["sentence_embedding"], {k: feeds[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})


def measure(session, size, rounds=3):
    out = []
    for _ in range(rounds):
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        wall0 = time.perf_counter()
        for i in range(0, len(texts), size):
            run(session, texts[i:i + size])
        wall = time.perf_counter() - wall0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        batches = (len(texts) + size - 1) // size
        out.append((wall / batches * 1000, cpu / len(texts) * 1000))
    return np.median([o[0] for o in out]), np.median([o[1] for o in out])


for size in [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "1,2,4,8").split(",")]:
    for name, session in (("1 thread", encoder._session), ("2 threads", wide)):
        wall, cpu = measure(session, size)
        print(f"batch {size}  {name:9}  wall {wall:6.2f} ms per batch  CPU {cpu:5.2f} ms per query", flush=True)
