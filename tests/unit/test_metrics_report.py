"""Sweep specifications, the printed table, results.json and the charts."""

from __future__ import annotations

import json

import pytest
from edgeindex.errors import ValidationError
from edgeindex.evaluation import report
from edgeindex.evaluation.modes import parse_sweep
from edgeindex.evaluation.runner import SystemRun, measure

QRELS = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}}


def test_parse_sweep():
    assert parse_sweep("alpha=0,0.1,...,1") == ("alpha", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    assert parse_sweep("alpha=0.25,0.75") == ("alpha", [0.25, 0.75])
    assert parse_sweep("fusion=linear,rrf") == ("fusion", ["linear", "rrf"])
    for bad in ("beta=1,2", "alpha", "alpha=0,...,1", "alpha=1,0.5,...,0", "alpha=a,b"):
        with pytest.raises(ValidationError):
            parse_sweep(bad)


def results_for(runs: list[SystemRun], *, sweep=None) -> dict:
    return {"dataset": {"name": "tiny", "documents": 3, "judged_queries": 2},
            "config": {"k": 10, "repeat": 2},
            "systems": {r.key: r.summary(QRELS, 10) for r in runs}, "sweep": sweep}


def test_table_json_and_charts(tmp_path):
    runs = [
        SystemRun("edgeindex-hybrid", "edgeindex", "hybrid", {}, 3, run={"q1": ["d1", "d2"], "q2": ["d3"]},
                  latencies_ms=[5.0, 6.0, 7.0, 50.0], server_timings=[{"took_ms": 4.0, "embed_ms": 2.0}]),
        SystemRun("chroma", "chroma", "vector", {"space": "cosine"}, 3, run={"q1": ["d2"]},
                  latencies_ms=[1.0, 2.0, 3.0, 4.0]),
        SystemRun("bm25", "bm25", "text", {}, 3, latencies_ms=[0.5, 0.6, 0.7, 0.8]),
    ]
    sweep = {"param": "alpha", "points": [
        {"value": 0.0, "metrics": {"recall@10": 0.5, "mrr@10": 0.5, "map@10": 0.4, "ndcg@10": 0.45},
         "latency_ms": {"p50": 5.0, "p99": 9.0}},
        {"value": 1.0, "metrics": {"recall@10": 0.7, "mrr@10": 0.6, "map@10": 0.5, "ndcg@10": 0.55},
         "latency_ms": {"p50": 6.0, "p99": 8.0}}]}
    results = results_for(runs, sweep=sweep)
    table = report.format_table(results)
    lines = table.splitlines()
    assert "NDCG@10" in lines[1] and "p99 ms" in lines[1]
    hybrid = next(line for line in lines if line.startswith("edgeindex hybrid"))
    assert "alpha=default" in hybrid and "1.0000" in hybrid          # perfect run
    assert next(line for line in lines if line.startswith("BM25")).count("0.0000") == 4
    assert "0.4000" in report.format_sweep(results)
    assert report.unanswered_queries(results) == []        # the hybrid run found q2's document

    written = report.write(results, tmp_path / "out")
    assert [p.name for p in written] == ["results.json", "metrics.png", "latency_cdf.png", "sweep_alpha.png"]
    for path in written[1:]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    saved = json.loads(written[0].read_text())
    assert saved["systems"]["chroma"]["metrics"]["recall@10"] == pytest.approx(0.25)
    assert saved["systems"]["edgeindex-hybrid"]["latency_ms"]["n"] == 4
    assert saved["systems"]["edgeindex-hybrid"]["server_latency_ms"]["embed_ms"]["p50"] == 2.0
    assert "embed_ms p50 2.0" in report.format_server_timings(results)
    assert saved["systems"]["bm25"]["per_query"]["q2"]["ndcg"] == 0.0

    del results["systems"]["edgeindex-hybrid"]
    assert report.unanswered_queries(results) == ["q2"]


async def test_measure_interleaves_systems_and_rotates_their_order():
    calls: list[tuple[str, str]] = []

    def system(name: str, answer: list[str]) -> SystemRun:
        async def search(text: str):
            calls.append((name, text))
            return answer, 1.0
        return SystemRun(name, name, "m", {}, 1, search)

    queries = {"q1": "one", "q2": "two", "q3": "three"}
    a, b = system("a", ["d1"]), system("b", ["d2"])
    await measure([a, b], queries, 2)
    assert calls[:2] == [("a", "one"), ("b", "one")]                  # untimed warm-up, one query each
    timed = calls[2:]
    assert timed[:6] == [("a", "one"), ("b", "one"), ("b", "two"), ("a", "two"), ("a", "three"), ("b", "three")]
    assert len(timed) == 12                                            # 3 queries x 2 systems x 2 passes
    assert a.run == {"q1": ["d1"], "q2": ["d1"], "q3": ["d1"]} and len(b.latencies_ms) == 6


def test_enough_passes_for_a_meaningful_p99():
    from edgeindex.evaluation.runner import (
        MIN_LATENCY_SAMPLES,
        MIN_PASSES,
        timed_passes,
    )

    assert timed_passes(11) == 19 and 11 * timed_passes(11) >= MIN_LATENCY_SAMPLES   # business-reports
    assert timed_passes(43) == 5 and 43 * 4 < MIN_LATENCY_SAMPLES <= 43 * 5         # msmarco
    assert timed_passes(5000) == MIN_PASSES
