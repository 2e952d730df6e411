"""The metric code against a maintained library (ranx), and against hand-worked values."""

from __future__ import annotations

import math
import random

import pytest
from edgeindex.evaluation import metrics
from ranx import Qrels, Run
from ranx import evaluate as ranx_evaluate

K = 5
RANX_NAMES = {"recall": f"recall@{K}", "mrr": f"mrr@{K}", "map": f"map@{K}", "ndcg": f"ndcg@{K}"}

# Graded judgements (0 = judged not relevant), ties in the scores, a judged query
# missing from the run (q3), a run query without judgements (q9), more relevant
# documents than k (q4), and a relevant document never retrieved (q1: d9).
QRELS = {
    "q1": {"d1": 3, "d2": 1, "d3": 0, "d9": 2},
    "q2": {"d5": 1, "d6": 1},
    "q3": {"d1": 2},
    "q4": {f"d{i}": 1 + i % 3 for i in range(1, 9)},
}
SCORES = {
    "q1": {"d3": 0.9, "d2": 0.8, "d4": 0.8, "d1": 0.5, "d7": 0.4, "d8": 0.1},   # d2/d4: a tie
    "q2": {"d5": 0.7, "d6": 0.7, "d1": 0.2},                                     # two relevant tied: order is moot
    "q4": {"d9": 1.0, "d2": 0.9, "d4": 0.8, "d5": 0.8, "d1": 0.5, "d8": 0.4},   # d4 (grade 2) / d5 (grade 3) tie
    "q9": {"d1": 1.0},
}


def ranx_means(qrels: dict, scores: dict) -> dict[str, float]:
    out = ranx_evaluate(Qrels(qrels), Run(scores), list(RANX_NAMES.values()), make_comparable=True)
    return {name: float(out[ranx_name]) for name, ranx_name in RANX_NAMES.items()}


def ranx_per_query(qrels: dict, scores: dict) -> dict[str, dict[str, float]]:
    ranx_qrels, ranx_run = Qrels(qrels), Run(scores)
    ranx_run.make_comparable(ranx_qrels)
    out = ranx_evaluate(ranx_qrels, ranx_run, list(RANX_NAMES.values()), return_mean=False)
    qids = list(ranx_qrels.keys())
    return {qid: {name: float(out[ranx_name][i]) for name, ranx_name in RANX_NAMES.items()}
            for i, qid in enumerate(qids)}


def untie(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Scores that encode our tie-broken order exactly, so ranx ranks the same list."""
    out = {}
    for qid, by_doc in scores.items():
        ranking = metrics.rank_by_score(by_doc)
        out[qid] = {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
    return out


def our_run(scores: dict) -> dict[str, list[str]]:
    return {qid: metrics.rank_by_score(by_doc) for qid, by_doc in scores.items()}


def test_matches_ranx_with_graded_qrels_ties_and_missing_queries():
    ours = metrics.per_query(QRELS, our_run(SCORES), K)
    theirs = ranx_per_query(QRELS, untie(SCORES))
    assert set(ours) == {"q1", "q2", "q3", "q4"}          # q9 has no judgement: ignored
    for qid in ours:
        for name in metrics.METRICS:
            assert ours[qid][name] == pytest.approx(theirs[qid][name], abs=1e-9), (qid, name)
    means = metrics.evaluate(QRELS, our_run(SCORES), K)
    for name, value in ranx_means(QRELS, untie(SCORES)).items():
        assert means[f"{name}@{K}"] == pytest.approx(value, abs=1e-9), name
    # the missing judged query drags every mean down instead of being skipped
    assert ours["q3"] == {"recall": 0.0, "mrr": 0.0, "map": 0.0, "ndcg": 0.0}


def test_ties_between_equally_relevant_documents_agree_with_ranx_raw_scores():
    # q2's tie is between two documents of the same grade: any tie-break gives the same numbers
    qrels = {"q2": QRELS["q2"]}
    ours = metrics.evaluate(qrels, our_run({"q2": SCORES["q2"]}), K)
    theirs = ranx_means(qrels, {"q2": SCORES["q2"]})
    assert {f"{n}@{K}": v for n, v in theirs.items()} == pytest.approx(ours)


def test_hand_worked_values():
    # q1 ranking (ties by id): d3 (0), d2 (1), d4 (-), d1 (3), d7 (-); relevant: d1, d2, d9 (grades 3, 1, 2)
    q1 = metrics.query_metrics(QRELS["q1"], our_run(SCORES)["q1"], K)
    assert q1["recall"] == pytest.approx(2 / 3)
    assert q1["mrr"] == pytest.approx(1 / 2)
    assert q1["map"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    dcg = 1 / math.log2(3) + 3 / math.log2(5)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert q1["ndcg"] == pytest.approx(dcg / idcg)


def test_duplicates_count_once_and_cutoff_applies():
    grades = {"a": 1, "b": 1}
    assert metrics.query_metrics(grades, ["a", "a", "b"], 2)["recall"] == 1.0
    assert metrics.query_metrics(grades, ["x", "y", "a"], 2)["recall"] == 0.0
    assert metrics.query_metrics(grades, ["x", "a"], 10)["mrr"] == 0.5


def test_rank_by_score_breaks_ties_by_id():
    assert metrics.rank_by_score({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]


def test_random_runs_match_ranx():
    rng = random.Random(7)
    qrels, scores = {}, {}
    for q in range(40):
        docs = [f"d{i}" for i in rng.sample(range(60), 25)]
        judged = docs[:rng.randint(1, 15)]
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        qrels[f"q{q}"][judged[0]] = rng.randint(1, 3)     # at least one relevant
        if q % 9 != 0:                                     # some judged queries are missing from the run
            retrieved = rng.sample(docs, rng.randint(0, 20))
            scores[f"q{q}"] = {d: rng.random() for d in retrieved}
    scores = {q: s for q, s in scores.items() if s}
    ours = metrics.evaluate(qrels, our_run(scores), K)
    theirs = ranx_means(qrels, scores)
    for name, value in theirs.items():
        assert ours[f"{name}@{K}"] == pytest.approx(value, abs=1e-9), name


def test_invalid_input_is_refused():
    with pytest.raises(ValueError, match="k must be"):
        metrics.query_metrics({"a": 1}, ["a"], 0)
    with pytest.raises(ValueError, match="no relevant judgement"):
        metrics.evaluate({"q": {"a": 0}}, {"q": ["a"]}, 10)


def test_latency_percentiles():
    summary = metrics.latency_summary([float(v) for v in range(1, 101)])
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p95"] == pytest.approx(95.05)
    assert summary["p99"] == pytest.approx(99.01)
    assert summary["n"] == 100
    assert math.isnan(metrics.latency_summary([])["p99"])
