"""The step engine's statements per document, alone (main: one statement each, pipelined in a group commit) or
merged (one statement per kind in a group commit), on an embedded Postgres of its own: CPU of this process (the
ingest worker's side: psycopg and the event loop) and of the Postgres backends, per document.

Each document is what an ingest run costs the engine: its start, 7 steps (step entered, checkpoint of a ~200-byte
output), its finish; --runs documents in flight at once, as MAX_RUNS keeps them. Variants alternate, --rounds each.
    flock /tmp/edgeindex-bench.lock .venv/bin/python results/throughput/session13/ingest13/step_statements_microbench.py
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from psycopg.types.json import Jsonb

from edgeindex import sqlfiles
from edgeindex.bindings.database import Database
from edgeindex.runtime import model_first
from edgeindex.runtime.dev import EmbeddedPostgres
from edgeindex.workflow import ENGINE_MERGES
from edgeindex.workflow_writes import GroupCommit

SQL = sqlfiles.load("workflow.sql")
RNG = random.Random(13)
STEPS = ["extract", "chunk", "diff", "embed", "summarize", "upsert", "delete-stale"]
DDL = """
CREATE TABLE workflow_runs (id text PRIMARY KEY, workflow text NOT NULL, params jsonb NOT NULL,
    status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'complete', 'errored')), current_step text,
    error text, attempts integer NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE workflow_steps (run_id text NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE, name text NOT NULL,
    seq integer NOT NULL, output jsonb, attempts integer NOT NULL DEFAULT 1,
    completed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (run_id, name));
"""


def backends_cpu(pgdata: Path) -> float:
    total = 0
    for pid in model_first.postgres_pids(pgdata):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


async def one_run(writes: GroupCommit, run_id: str) -> None:
    await writes.fetchone(SQL["start_run"], {"id": run_id, "workflow": "ingest", "params": Jsonb({"document": run_id})})
    for seq, name in enumerate(STEPS, 1):
        await writes.execute(SQL["set_current_step"], {"id": run_id, "step": name})
        await asyncio.sleep(RNG.random() * 0.004)  # the step's own work: runs fall out of step, kinds mix
        output = {"key": f"artifacts/{run_id}/{name}", "count": seq, "hash": uuid.uuid4().hex * 2}
        encoded = json.dumps(output)
        await writes.execute(SQL["record_step"], {"run": run_id, "name": name, "seq": seq,
                                                  "output": Jsonb(output, dumps=lambda _, e=encoded: e), "attempts": 1})
    await writes.execute(SQL["finish_run"], {"id": run_id, "status": "complete", "error": None})


async def variant(db: Database, pgdata: Path, merges, documents: int, runs: int) -> dict:
    writes = GroupCommit(db, merges=merges)
    ids = [f"doc-{uuid.uuid4()}" for _ in range(documents)]
    sem = asyncio.Semaphore(runs)

    async def bounded(run_id: str) -> None:
        async with sem:
            await one_run(writes, run_id)

    cpu0, pg0, wall0 = time.process_time(), backends_cpu(pgdata), time.perf_counter()
    await asyncio.gather(*(bounded(r) for r in ids))
    cpu1, pg1, wall1 = time.process_time(), backends_cpu(pgdata), time.perf_counter()
    return {"process_ms_per_doc": 1000 * (cpu1 - cpu0) / documents, "postgres_ms_per_doc": 1000 * (pg1 - pg0) / documents,
            "wall_s": wall1 - wall0, **writes.stats()}


async def main(args) -> None:
    with tempfile.TemporaryDirectory(prefix="ingest13-mb-") as state:
        pgdata = Path(state) / "pgdata"
        pg = EmbeddedPostgres(pgdata)
        dsn = pg.start()
        try:
            db = Database(dsn, min_size=1, max_size=4)
            await db.open()
            async with db.connection() as conn:
                await conn.execute(DDL)
                await conn.commit()
            await variant(db, pgdata, None, 200, args.runs)  # warm-up
            await variant(db, pgdata, ENGINE_MERGES, 200, args.runs)
            results: dict[str, list[dict]] = {"alone": [], "merged": []}
            for r in range(args.rounds):
                order = ["alone", "merged"] if r % 2 == 0 else ["merged", "alone"]
                for name in order:
                    got = await variant(db, pgdata, None if name == "alone" else ENGINE_MERGES, args.documents, args.runs)
                    results[name].append(got)
                    print(f"round {r + 1} {name:6} process {got['process_ms_per_doc']:.2f} ms/doc, postgres "
                          f"{got['postgres_ms_per_doc']:.2f} ms/doc, {got['wall_s']:.1f} s, "
                          f"{got['mean_statements_per_commit']} statements per commit sent as {got['mean_sent_per_commit']}",
                          flush=True)
            for name, rows in results.items():
                print(f"median {name:6} process {statistics.median(r['process_ms_per_doc'] for r in rows):.2f} ms/doc, "
                      f"postgres {statistics.median(r['postgres_ms_per_doc'] for r in rows):.2f} ms/doc, "
                      f"wall {statistics.median(r['wall_s'] for r in rows):.1f} s")
            await db.close()
        finally:
            pg.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
