"""Vector-only retrieval with 8-bit query weights against fp32 ones (the quality gate of session 20's lead).

  .venv/bin/python results/throughput/session21/nbits_quality.py /tmp/s20/packed_8b32a4.onnx
  .venv/bin/python results/throughput/session21/nbits_quality.py   (the search worker's 8-bit graph, session 22)

Documents: each dataset's corpus embedded by the fp32 model (what ingestion stores; cached in /tmp/s21).
Queries: the packed fp32 graph the search worker runs, and the 8-bit weight-only copy of it (session20/nbits),
each in batches of eight drawn in a fixed random order, as the query batcher runs them. Scores: nDCG@10 and
recall@10 of exact cosine search over the corpus (no Postgres: only the query vectors differ between the arms),
and how many queries' top-10 lists change.
"""
import json
import math
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from shared.bindings import onnx_query  # noqa: E402
from shared.bindings.ai import LocalEmbedder  # noqa: E402
from shared.bindings.packed_query import PackedQueries  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = ("msmarco", "business-reports", "xquad-de", "xquad-zh")


def read(name):
    corpus = [json.loads(line) for line in open(DATA / name / "corpus.jsonl", encoding="utf-8")]
    queries = {q["_id"]: q["text"] for q in map(json.loads, open(DATA / name / "queries.jsonl", encoding="utf-8"))}
    qrels = {}
    for path in (DATA / name / "qrels").glob("*.tsv"):
        for line in open(path, encoding="utf-8").read().splitlines()[1:]:
            q, d, score = line.split("\t")
            if int(score) > 0:
                qrels.setdefault(q, {})[d] = int(score)
    return corpus, {q: t for q, t in queries.items() if q in qrels}, qrels


def ndcg(ranked, rels, k=10):
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    return dcg / sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))


def main():
    emb = LocalEmbedder()
    emb.prepare_queries()
    enc = emb._queries
    if len(sys.argv) > 1:   # a graph of session 20's script, its rows unaligned
        quantized = PackedQueries.__new__(PackedQueries)
        quantized.path, quantized._tokenize, quantized.align = sys.argv[1], enc._tokenize, 1
        quantized._session = onnx_query._session(Path(sys.argv[1]), threads=2)
    else:                   # the search worker's (bindings/query_weights.py, rows aligned; session 22)
        quantized = enc.queries_8bit
    arms = {"fp32": enc.packed, "8-bit": quantized}
    for name in SETS:
        corpus, queries, qrels = read(name)
        cache = Path(f"/tmp/s21/docs-{name}.npy")
        if cache.exists():
            docs = np.load(cache)
        else:
            texts = [(d.get("title") + "\n\n" if d.get("title") else "") + d["text"] for d in corpus]
            docs = emb.encode_sync(texts)
            np.save(cache, docs)
        ids = [d["_id"] for d in corpus]
        order = list(queries)
        random.Random(5).shuffle(order)
        tops, scores = {}, {}
        for arm, packed in arms.items():
            vectors = np.zeros((len(order), docs.shape[1]), np.float32)
            for at in range(0, len(order), 8):
                vectors[at:at + 8] = packed.encode([queries[q] for q in order[at:at + 8]])
            top = np.argsort(-(vectors @ docs.T), axis=1)[:, :10]
            tops[arm] = [[ids[i] for i in row] for row in top]
            n = [ndcg(r, qrels[q]) for q, r in zip(order, tops[arm])]
            recall = [len(set(r) & set(qrels[q])) / len(qrels[q]) for q, r in zip(order, tops[arm])]
            scores[arm] = (np.mean(n), np.mean(recall))
            if arm == "8-bit":
                cos = (vectors * base).sum(1)
            else:
                base = vectors
        changed = sum(a != b for a, b in zip(tops["fp32"], tops["8-bit"]))
        same_set = sum(set(a) == set(b) for a, b in zip(tops["fp32"], tops["8-bit"]))
        print(f"{name:17} {len(order):4} queries  nDCG@10 fp32 {scores['fp32'][0]:.4f} 8-bit {scores['8-bit'][0]:.4f} "
              f"(delta {scores['8-bit'][0] - scores['fp32'][0]:+.4f})  recall@10 {scores['fp32'][1]:.4f} / "
              f"{scores['8-bit'][1]:.4f}  top-10 order changed {changed}, set changed {len(order) - same_set}; "
              f"query cosine min {cos.min():.5f} median {np.median(cos):.5f}", flush=True)


if __name__ == "__main__":
    main()
