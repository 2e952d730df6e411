"""Ranking metrics at a cutoff k, and latency percentiles.

Definitions follow trec_eval and ranx, so numbers compare with published ones:

- a document is *relevant* when its graded judgement is >= 1; unjudged = 0;
- Recall@k  = |relevant in top k| / |relevant|;
- MRR@k     = 1 / rank of the first relevant document in the top k (0 if none);
- MAP@k     = sum over relevant documents at rank r <= k of Precision@r, divided by
  |relevant| (all of them, as trec_eval's ``map_cut`` and ranx's ``map@k`` do);
- NDCG@k    = DCG@k / IDCG@k with *linear* gain: DCG@k = sum_{r<=k} grade_r / log2(r + 1)
  (Järvelin & Kekäläinen; trec_eval's ``ndcg_cut`` and ranx's ``ndcg``). IDCG
  ranks the judged grades in decreasing order.

A run is a ranked list of document ids per query; a document appearing twice
counts once, at its first rank. The mean is taken over the *judged* queries (at
least one relevant document): a judged query missing from the run scores 0 on
every metric; queries in the run without judgements are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

METRICS = ("recall", "mrr", "map", "ndcg")

Qrels = Mapping[str, Mapping[str, int]]          # query id -> document id -> grade
Run = Mapping[str, Sequence[str]]                # query id -> ranked document ids


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Ranked document ids from scores; ties broken by document id so runs are reproducible."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def _unique(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))


def query_metrics(grades: Mapping[str, int], ranking: Sequence[str], k: int) -> dict[str, float]:
    """Every metric of one query at cutoff ``k``."""
    if k < 1:
        raise ValueError("k must be at least 1")
    relevant = {doc for doc, grade in grades.items() if grade >= 1}
    if not relevant:
        raise ValueError("a query without relevant documents cannot be scored")
    top = _unique(ranking)[:k]
    hits = 0
    first_hit = 0
    precision_sum = 0.0
    dcg = 0.0
    for rank, doc in enumerate(top, start=1):
        grade = grades.get(doc, 0)
        if grade >= 1:
            hits += 1
            precision_sum += hits / rank
            first_hit = first_hit or rank
            dcg += grade / math.log2(rank + 1)
    ideal = sorted((g for g in grades.values() if g >= 1), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return {
        "recall": hits / len(relevant),
        "mrr": 1.0 / first_hit if first_hit else 0.0,
        "map": precision_sum / len(relevant),
        "ndcg": dcg / idcg,
    }


def judged_queries(qrels: Qrels) -> list[str]:
    """Query ids with at least one relevant judgement, in qrels order."""
    return [qid for qid, grades in qrels.items() if any(g >= 1 for g in grades.values())]


def per_query(qrels: Qrels, run: Run, k: int) -> dict[str, dict[str, float]]:
    """Metrics for every judged query (missing from the run: ranked nothing, so 0)."""
    return {qid: query_metrics(qrels[qid], run.get(qid, ()), k) for qid in judged_queries(qrels)}


def mean(scores: Mapping[str, Mapping[str, float]], k: int) -> dict[str, float]:
    """Mean of each metric over per-query scores, keyed ``"ndcg@10"`` etc."""
    if not scores:
        raise ValueError("the qrels hold no relevant judgement: nothing to evaluate")
    return {f"{name}@{k}": float(np.mean([s[name] for s in scores.values()])) for name in METRICS}


def evaluate(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """Mean of each metric over the judged queries, keyed ``"ndcg@10"`` etc."""
    return mean(per_query(qrels, run, k), k)


def latency_summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 (linear interpolation between samples, numpy's default), mean and count."""
    if not samples_ms:
        return {"p50": math.nan, "p95": math.nan, "p99": math.nan, "mean": math.nan, "n": 0}
    values = np.asarray(samples_ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "mean": float(values.mean()),
            "n": int(values.size)}
