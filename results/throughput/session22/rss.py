"""Resident memory of a process that prepared the search worker's query encoders, by EDGEINDEX_QUERY_WEIGHTS.

  for w in fp32 8bit; do EDGEINDEX_QUERY_WEIGHTS=$w .venv/bin/python results/throughput/session22/rss.py; done"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from shared.bindings.ai import LocalEmbedder  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


embedder = LocalEmbedder()
before = rss_mib()
started = time.perf_counter()
embedder.prepare_queries()
took = time.perf_counter() - started
for _ in range(50):   # the sessions' arenas as a few batches leave them
    embedder._queries.encode_queries(["how long is the river nile", "define photosynthesis", "x"])
print(f"EDGEINDEX_QUERY_WEIGHTS={os.environ.get('EDGEINDEX_QUERY_WEIGHTS', '8bit')}: {embedder.query_vectors}; "
      f"RSS {before:.0f} MiB with the model, {rss_mib():.0f} MiB after prepare_queries and 50 batches "
      f"(prepare_queries took {took:.2f} s)")
