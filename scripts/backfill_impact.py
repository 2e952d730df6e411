"""What a model backfill (`edgeindex models backfill`) costs the searches it runs beside.

Starts a fresh local stack (embedded Postgres, moto, the upload and search workers) in a temp
folder, loads --chunks chunks of real MS MARCO passage text with all-MiniLM-L6-v2's vectors (the
serving model; scripts/load_search.py's loader, vectors cached per machine), then measures
uncached searches (`"cache": false`, --agents concurrent agents, the project's SDK) for --seconds each,
in turn:

  idle        nothing else runs
  duty D      while `edgeindex models backfill --to MODEL --duty D` embeds the chunks with another
              model in a process of its own (measured once it has written its first vectors)
  idle        again at the end: the two idle runs bracket the machine's drift

For each duty it reports the search p50 and p99 and their ratios to the idle runs' (their mean),
and the chunks/s the backfill wrote during the phase (it writes a batch of 64 at a time: a phase
spans several); the backfill is stopped (SIGTERM: it ends
after its batch) and its vectors dropped before the next. The run ends with one JSON line:
{"benchmark": "backfill_impact", "chunks", "agents", "model", "idle_p50_ms", "errors", "duties": [{"duty", "p50_ms",
"p50_ratio", "p99_ratio", "chunks_per_second"}, ...]}.

  .venv/bin/python scripts/backfill_impact.py                     # 5,000 chunks, 4 agents, duties 0.5 and 1
  .venv/bin/python scripts/backfill_impact.py --duties 0.25,0.5,1 --seconds 120
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import time

from load_search import DATA, ROOT, chunk_vectors, loaded_stack, run_phase  # scripts/: on sys.path


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _vectors_written(dsn: str, model_id: str) -> int:
    from edgeindex.bindings.database import Database

    db = Database(dsn, min_size=1, max_size=1, name="BENCH")
    await db.open()
    try:
        row = await db.fetchone("SELECT count(*) AS n FROM chunk_vectors WHERE model_id = %s", (model_id,))
        return int(row["n"])
    finally:
        await db.close()


def _search(url: str, key: str, bodies: list[dict], label: str, seconds: float, agents: int) -> dict:
    result = asyncio.run(run_phase(url, key, bodies, agents, seconds))
    ms = result["client"]
    figures = {"p50_ms": round(statistics.median(ms), 2), "p99_ms": round(_p(ms, 0.99), 2), "n": len(ms),
               "errors": result["errors"]}
    print(f"{label:>10}: {figures['n']} searches ({figures['errors']} errors), p50 {figures['p50_ms']} ms, "
          f"p99 {figures['p99_ms']} ms "
          f"(load average {result['load']:.1f})", flush=True)
    return figures


def _backfill(dsn: str, model: str, model_id: str, duty: float) -> subprocess.Popen:
    command = [sys.executable, "-m", "edgeindex.cli", "models", "backfill", "--to", model, "--duty", str(duty),
               "--dsn", dsn, "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # measured once the model is loaded and vectors are going in, not while it starts
    while asyncio.run(_vectors_written(dsn, model_id)) == 0:
        if process.poll() is not None:
            raise SystemExit(f"the backfill ended before it wrote anything (exit {process.returncode})")
        time.sleep(0.5)
    return process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=5_000)
    parser.add_argument("--seconds", type=float, default=90.0, help="length of each phase")
    parser.add_argument("--agents", type=int, default=4, help="concurrent searching agents")
    parser.add_argument("--duties", default="0.5,1", help="comma-separated backfill duties to measure")
    parser.add_argument("--model", default="multilingual-e5-small", help="the model the backfill embeds with")
    args = parser.parse_args()
    duties = [float(d) for d in args.duties.split(",")]

    sys.path.insert(0, str(ROOT))
    from edgeindex.bindings.ai import local_model

    model_id = local_model(args.model).model_id
    queries = [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]
    # more than a phase can send: it ends on time
    bodies = [{"query": queries[i % len(queries)], "k": 10, "cache": False} for i in range(200_000)]
    vectors = chunk_vectors(args.chunks, "real")
    with loaded_stack("edgeindex-backfill-", args.chunks, vectors) as (stack, key):
        url = stack.url("search")
        _search(url, key, bodies[:50], "warm-up", args.seconds, args.agents)
        idle = [_search(url, key, bodies, "idle", args.seconds, args.agents)]
        measured = []
        for duty in duties:
            process = _backfill(stack.dsn, args.model, model_id, duty)
            try:
                before, started = asyncio.run(_vectors_written(stack.dsn, model_id)), time.perf_counter()
                figures = _search(url, key, bodies, f"duty {duty}", args.seconds, args.agents)
                written = asyncio.run(_vectors_written(stack.dsn, model_id)) - before
                figures["chunks_per_second"] = round(written / (time.perf_counter() - started), 1)
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=300)
            subprocess.run([sys.executable, "-m", "edgeindex.cli", "models", "drop", args.model,
                            "--dsn", stack.dsn], check=True, capture_output=True)
            measured.append({"duty": duty, **figures})
        idle.append(_search(url, key, bodies, "idle", args.seconds, args.agents))
    idle_p50 = statistics.mean(r["p50_ms"] for r in idle)
    idle_p99 = statistics.mean(r["p99_ms"] for r in idle)
    for m in measured:
        m["p50_ratio"] = round(m["p50_ms"] / idle_p50, 3)
        m["p99_ratio"] = round(m["p99_ms"] / idle_p99, 3)
        print(f"duty {m['duty']}: search p50 {m['p50_ratio']}x idle, p99 {m['p99_ratio']}x; "
              f"backfill {m['chunks_per_second']} chunks/s", flush=True)
    print(json.dumps({"benchmark": "backfill_impact", "chunks": args.chunks, "agents": args.agents, "model": model_id,
                      "errors": sum(r["errors"] for r in idle + measured),
                      "idle_p50_ms": round(idle_p50, 2), "idle_p50_runs_ms": [r["p50_ms"] for r in idle],
                      "duties": measured}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
