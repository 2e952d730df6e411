"""Documents that share an ingest process's embedding batches keep their own durability: a poison
document fails alone, a crash in the middle of a shared batch resumes every document once, and two
ingest processes on one queue never run a version twice.

Documents go in through the bulk route, so they reach the queue together and are worked on in the
same queue batches and the same model calls (``GET /batcher`` on the ingest worker says so).
"""

from __future__ import annotations

import json
from urllib.parse import quote

from edgeindex.faults import Faults
from edgeindex.runtime.dev import free_port

from ..helpers import TOPICS, Client, chunks, wait_document, wait_for
from .test_workflow import ingest_worker, wait_exit

NDJSON = {"Content-Type": "application/x-ndjson"}


def texts(prefix: str, n: int) -> dict[str, str]:
    """``n`` one-chunk documents, each different."""
    return {f"{prefix}-{i}": f"Note {i} on {TOPICS[i % len(TOPICS)]}: the {prefix} batch keeps its order {i * 7}."
            for i in range(n)}


def bulk(tenant, docs: dict[str, str]) -> None:
    body = "".join(json.dumps({"document_id": d, "text": t}) + "\n" for d, t in docs.items()).encode()
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/documents", raw=body, headers=NDJSON)
    assert status == 200 and answer["accepted"] == len(docs), answer


def batcher(stack, name: str = "ingest") -> dict:
    status, body = Client(stack.url(name), stack.admin_key).get("/batcher")
    assert status == 200, body
    return body


def executed(stack, name: str, run_id: str) -> list[list[str]]:
    status, body = Client(stack.url(name), stack.admin_key).get(f"/runs?id={quote(run_id, safe='')}")
    assert status == 200, body
    return body["executed_here"]


async def assert_each_ingested_once(db, tenant, docs: dict[str, str]) -> None:
    for doc_id, text in docs.items():
        doc = await wait_document(tenant, doc_id, timeout=180)
        assert (doc["status"], doc["version"], doc["chunk_count"]) == ("ready", 1, 1), doc
        assert [c["content"] for c in await chunks(db, tenant.entity_id, doc_id)] == [text]  # no duplicate rows


async def test_a_poison_document_fails_alone_in_a_shared_embedding_batch(stack, tenant, db):
    docs = texts("poison", 6)
    docs["poison-3"] += " POISON-MARKER"
    with ingest_worker(stack, Faults(poison_text="POISON-MARKER")):
        bulk(tenant, docs)
        poisoned = await wait_document(tenant, "poison-3", statuses=("failed",), timeout=180)
        good = {d: t for d, t in docs.items() if d != "poison-3"}
        await assert_each_ingested_once(db, tenant, good)
        stats = batcher(stack)
    assert "injected model failure" in poisoned["error"] and poisoned["step"] == "embed"
    assert await chunks(db, tenant.entity_id, "poison-3") == []
    # The poison document shared a model call with others, which were then embedded without it.
    assert stats["isolated"] >= 1, stats


async def test_a_crash_in_a_shared_batch_resumes_every_document_once(stack, tenant, db):
    docs = texts("crash", 8)
    with ingest_worker(stack, Faults(exit_after_step="embed@crash-5")) as process:
        bulk(tenant, docs)
        assert await wait_exit(process) == 137  # died with the other runs of its batches in flight
    # The normal worker is back: it resumes the unfinished runs and settles the redelivered messages.
    await assert_each_ingested_once(db, tenant, docs)

    async def runs():
        return await db.fetch("SELECT id, status FROM workflow_runs WHERE id LIKE %s ORDER BY id",
                              (f"ingest/{tenant.entity_id}/%",))

    # a document is ready at its upsert; its run completes after the step that deletes what it replaced
    async def settled():
        return all(r["status"] != "running" for r in await runs())

    await wait_for(settled, timeout=120)
    rows = await runs()
    assert len(rows) == len(docs) and {r["status"] for r in rows} == {"complete"}, rows
    # A step checkpointed before the crash never ran again: crash-5 resumed after its embed step.
    run_id = (await db.fetch("SELECT run_id FROM documents WHERE entity_id = %s AND id = %s",
                             (tenant.entity_id, "crash-5")))[0]["run_id"]
    await wait_for(lambda: executed(stack, "ingest", run_id) != [], timeout=60)
    assert "embed" not in [s for steps in executed(stack, "ingest", run_id) for s in steps]


async def test_two_ingest_processes_on_one_queue_never_run_a_version_twice(stack, tenant, db):
    stack.ports["ingest-2"] = free_port()
    stack.start_worker("ingest-2")
    try:
        stack.wait_healthy("ingest-2")
        docs = texts("pair", 40)
        bulk(tenant, docs)
        await assert_each_ingested_once(db, tenant, docs)
        runs = {r["document_id"]: r["run_id"] for r in await db.fetch(
            "SELECT id AS document_id, run_id FROM documents WHERE entity_id = %s", (tenant.entity_id,))}
        by_process = {name: {d: executed(stack, name, runs[d]) for d in docs} for name in ("ingest", "ingest-2")}
    finally:
        stack.stop_worker("ingest-2")
        stack.ports.pop("ingest-2", None)
    for doc_id in docs:
        ran = [step for name in by_process for steps in by_process[name][doc_id] for step in steps]
        # every step of the version ran exactly once, in one process or the other
        assert sorted(ran) == sorted(["extract", "chunk", "diff", "embed", "summarize", "upsert", "delete-stale"]), \
            (doc_id, {name: by_process[name][doc_id] for name in by_process})
    shares = {name: sum(bool(runs_) for runs_ in by_process[name].values()) for name in by_process}
    print("runs per process:", shares)
    assert sum(shares.values()) == len(docs)
