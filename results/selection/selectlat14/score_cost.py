"""Select's scoring stage (``timings.score_ms``: everything after the embedding) for tools-bfcl requests, in process
(scripts/tune_select.py's harness, vectors memoised, the catalogue of the 769 tools): the thread's CPU time of
each select (the embedding is memoised: this is the scoring) and of its ``_segment_picks`` calls; median of PASSES. Which requests make its tail, and how much of it is the sentences' and
clauses' whole-catalogue scores (``_segment_picks``).

    .venv/bin/python results/selection/selectlat14/score_cost.py [--first 500] [--passes 5] [--answers FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import tune_select  # noqa: E402

from edgeindex.selection import tools as tl  # noqa: E402
from edgeindex.selection.clauses import clause_spans  # noqa: E402
from edgeindex.selection.definitions import count_tokens, parse_tool  # noqa: E402


async def run(first: int, passes: int, answers_path: Path) -> None:
    tune_select.CACHE = Path("/tmp/selectlat14/tune-docs.pkl")
    emb = tune_select.MemoEmbedder()
    folder = Path("/work/shared/data/tools-bfcl")
    raw = tune_select._jsonl(folder / "tools.jsonl")
    queries = [q["query"] for q in tune_select._jsonl(folder / "queries.jsonl")][:first]
    defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(raw)]
    vecs = await emb.embed([d.embedded_text() for d in defs])
    dvecs = await emb.embed([d.description or d.name for d in defs])
    rows = [{"name": d.name, "description": d.description, "parameters": d.parameters, "category": d.category,
             "tags": list(d.tags), "requires": list(d.requires), "tokens": count_tokens(d.function()),
             "model_id": emb.model_id, "embedding": v, "description_embedding": dv if d.description else None,
             "used": 0, "shown": 0} for d, v, dv in zip(defs, vecs, dvecs)]
    db = tune_select.FakeDB({"tool_catalog": rows, "tool_example_vectors": []})
    tl._cache.clear()
    seg = {"n": 0, "cpu": 0.0}
    real = tl._segment_picks

    def timed_picks(*a, **k):
        c = time.thread_time()
        try:
            return real(*a, **k)
        finally:
            seg["cpu"] += time.thread_time() - c
            seg["n"] += len(a[0])

    tl._segment_picks = timed_picks
    out = {i: [] for i in range(len(queries))}
    segs = {i: [] for i in range(len(queries))}
    answers = {}
    for q in queries[:5]:
        await tl.select(db, emb, ["e"], tl.SelectRequest(q, None, 5, tl.DEFAULT_THRESHOLD, True, True, True))
    print(f"start {time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(passes):
        for i, q in enumerate(queries):
            request = tl.SelectRequest(q, None, 5, tl.DEFAULT_THRESHOLD, True, True, True)
            seg["cpu"] = 0.0
            c = time.thread_time()
            answer = await tl.select(db, emb, ["e"], request)
            out[i].append((time.thread_time() - c) * 1000)
            segs[i].append(seg["cpu"] * 1000)
            answers[i] = [t["name"] for t in answer["tools"]]
    emb.save()
    score = np.array([np.median(v) for v in out.values()])
    seg_ms = np.array([np.median(v) for v in segs.values()])
    parts = np.array([len(tl.segments(q)) if len(tl.segments(q)) >= 2 else 0 for q in queries])
    clauses = np.array([len(clause_spans(q, tl.CLAUSE_MIN_TERMS)) for q in queries])
    print(f"select CPU ms p50 {np.percentile(score, 50):.2f} p99 {np.percentile(score, 99):.2f} mean {score.mean():.2f}; "
          f"of it _segment_picks (thread CPU) mean {seg_ms.mean():.2f}")
    for label, sel in (("no parts", (parts == 0) & (clauses == 0)), ("sentences", parts > 0),
                       ("clauses", clauses > 0)):
        if sel.any():
            print(f"  {label:10s} n={sel.sum():3d} score p50 {np.percentile(score[sel], 50):.2f} p99 "
                  f"{np.percentile(score[sel], 99):.2f} mean {score[sel].mean():.2f}; _segment_picks mean "
                  f"{seg_ms[sel].mean():.2f}")
    print("10 largest: index sentences clauses select_cpu_ms segment_picks_cpu_ms")
    for i in np.argsort(-score)[:10]:
        print(f"  {i:4d} {parts[i]} {clauses[i]:2d} {score[i]:6.2f} {seg_ms[i]:6.2f}  {queries[i][:70]!r}")
    answers_path.write_text(json.dumps(answers))
    print(f"end {time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--first", type=int, default=500)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--answers", type=Path, default=Path("/tmp/selectlat14/score_answers.json"))
    args = parser.parse_args()
    asyncio.run(run(args.first, args.passes, args.answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
