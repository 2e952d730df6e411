"""Durability of the ingestion workflow with a real ingest process: killed between steps, killed inside
a step after its commit, a step that keeps failing (dead-letter queue), a file over the size limit.

The crashes are fault points (``edgeindex.faults``): each test restarts the session's ingest worker with a
``Faults`` armed (``edgeindex.testing.worker``) and restores a normal one afterwards.
"""

from __future__ import annotations

import contextlib
import json

from edgeindex.bindings import aws
from edgeindex.faults import Faults
from edgeindex.ingest.events import object_created, object_refs
from edgeindex.ingest.recovery import LOST, requeue_unfinished_sync
from edgeindex.object_keys import artifacts_prefix, object_key
from edgeindex.testing.worker import WorkerHooks

from ..helpers import (
    TOPICS,
    Client,
    chunks,
    document,
    generation,
    paragraph,
    put_document,
    wait_document,
    wait_for,
)

TEXT = document([paragraph(t) for t in TOPICS[:3]])  # three chunks


@contextlib.contextmanager
def ingest_worker(stack, faults: Faults, extra_env: dict[str, str] | None = None):
    """The ingest worker restarted with ``faults`` armed (and ``extra_env``); the stack's own is back when
    the block ends."""
    stack.stop_worker("ingest")
    holds = bool(stack.hooks and stack.hooks.holds)
    process = stack.start_worker("ingest", extra_env=extra_env, hooks=WorkerHooks(holds=holds, faults=faults))
    try:
        stack.wait_healthy("ingest")
        yield process
    finally:
        stack.stop_worker("ingest", kill=True)
        stack.start_worker("ingest")
        stack.wait_healthy("ingest")


async def wait_exit(process, timeout: float = 90.0) -> int:
    await wait_for(lambda: process.poll() is not None, timeout=timeout)
    return process.returncode


def run_status(stack, run_id: str) -> dict:
    from urllib.parse import quote

    status, body = Client(stack.url("ingest"), stack.admin_key).get(f"/runs?id={quote(run_id, safe='')}")
    assert status == 200, body
    return body


async def document_row(db, entity_id: str, document_id: str) -> dict:
    return await db.fetchone("SELECT status, run_id, version, ready_version, chunk_count, chunks_embedded, "
                             "chunks_reused, summary, error, step FROM documents WHERE entity_id = %s AND id = %s",
                             (entity_id, document_id))


async def step_names(db, run_id: str) -> list[str]:
    return [r["name"] for r in await db.fetch("SELECT name FROM workflow_steps WHERE run_id = %s ORDER BY seq",
                                              (run_id,))]


async def test_killed_between_steps_resumes_from_the_last_checkpoint(stack, tenant, db):
    with ingest_worker(stack, Faults(exit_after_step="embed@wf-kill")) as process:
        put_document(tenant, "wf-kill", TEXT)
        assert await wait_exit(process) == 137
        row = await document_row(db, tenant.entity_id, "wf-kill")
        assert row["status"] == "processing"
        assert await step_names(db, row["run_id"]) == ["extract", "chunk", "diff", "embed"]
        assert await chunks(db, tenant.entity_id, "wf-kill") == []  # nothing half-written
        status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/wf-kill")
        assert (doc["status"], doc["step"]) == ("processing", "embed")  # the last step the run entered
    # A normal worker resumes the run at start-up (the message itself is still invisible).
    doc = await wait_document(tenant, "wf-kill")
    assert (doc["status"], doc["chunk_count"], doc["chunks_embedded"]) == ("ready", 3, 3)
    rows = await chunks(db, tenant.entity_id, "wf-kill")
    assert [r["position"] for r in rows] == [0, 1, 2] and len({r["id"] for r in rows}) == 3  # no duplicates
    run = run_status(stack, row["run_id"])
    assert run["status"] == "complete" and run["invocations"] == 2
    assert run["executed_here"] == [["summarize", "upsert", "delete-stale"]]  # completed steps were replayed
    assert [(s["name"], s["attempts"]) for s in run["steps"]] == [
        ("extract", 1), ("chunk", 1), ("diff", 1), ("embed", 1), ("summarize", 1), ("upsert", 1), ("delete-stale", 1)]


async def test_killed_after_the_commit_and_delivered_twice_leaves_the_same_rows(stack, tenant, db):
    put_document(tenant, "wf-idem", document([paragraph(t) for t in TOPICS[3:]]))  # v1, normal run
    await wait_document(tenant, "wf-idem")
    with ingest_worker(stack, Faults(exit_in_step="upsert@wf-idem")) as process:
        put_document(tenant, "wf-idem", TEXT)  # v2 reuses nothing from v1
        assert await wait_exit(process) == 137
        row = await document_row(db, tenant.entity_id, "wf-idem")
        assert (row["status"], row["version"], row["chunks_embedded"]) == ("ready", 2, 3)  # committed...
        assert "upsert" not in await step_names(db, row["run_id"])                        # ...not checkpointed
        committed = await chunks(db, tenant.entity_id, "wf-idem")
        vectors = await db.fetch("SELECT id::text, embedding::text FROM chunks WHERE entity_id = %s "
                                 "AND document_id = %s ORDER BY id", (tenant.entity_id, "wf-idem"))
    # Resumed at start-up: upsert runs again. Then the same event is delivered once more.
    sqs = aws.client("sqs", endpoint=stack.sqs_endpoint, region="us-east-1", access_key_id="edgeindex",
                     secret_access_key="edgeindex")
    key = object_key(tenant.entity_id, "wf-idem", 2, "wf-idem", await generation(db, tenant.entity_id, "wf-idem"))
    sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName="edgeindex-ingest")["QueueUrl"],
                     MessageBody=json.dumps(object_created("edgeindex-documents", key, size=len(TEXT))))
    await wait_for(lambda: run_status(stack, row["run_id"])["status"] == "complete", timeout=60)
    admin = Client(stack.url("ingest"), stack.admin_key)  # the redelivered message is settled too
    await wait_for(lambda: len(admin.get(f"/outcomes?entity_id={tenant.entity_id}&document_id=wf-idem")[1]
                               ["outcomes"]) >= 2, timeout=60)
    assert await chunks(db, tenant.entity_id, "wf-idem") == committed
    assert await db.fetch("SELECT id::text, embedding::text FROM chunks WHERE entity_id = %s AND document_id = %s "
                          "ORDER BY id", (tenant.entity_id, "wf-idem")) == vectors
    again = await document_row(db, tenant.entity_id, "wf-idem")
    assert {k: again[k] for k in ("status", "version", "chunk_count", "chunks_embedded", "chunks_reused", "summary")} \
        == {k: row[k] for k in ("status", "version", "chunk_count", "chunks_embedded", "chunks_reused", "summary")}
    assert run_status(stack, row["run_id"])["executed_here"] == [["upsert", "delete-stale"]]


async def test_a_step_that_keeps_failing_ends_in_the_dead_letter_queue(stack, tenant, db):
    put_document(tenant, "wf-dlq", TEXT)
    v1 = await wait_document(tenant, "wf-dlq")
    v1_chunks = await chunks(db, tenant.entity_id, "wf-dlq")
    sqs = aws.client("sqs", endpoint=stack.sqs_endpoint, region="us-east-1", access_key_id="edgeindex",
                     secret_access_key="edgeindex")
    dlq = sqs.get_queue_url(QueueName="edgeindex-ingest-dlq")["QueueUrl"]
    with ingest_worker(stack, Faults(fail_step="chunk@wf-dlq"), {"EDGEINDEX_VAR_MAX_DOCUMENT_BYTES": "100000"}):
        put_document(tenant, "wf-dlq", TEXT + "\n\nA new paragraph that never makes it.")
        put_document(tenant, "wf-huge", "All work and no play. " * 5000)  # 110,000 bytes
        doc = await wait_document(tenant, "wf-dlq", version=2, statuses=("failed",), timeout=120)
        huge = await wait_document(tenant, "wf-huge")

        assert "injected transient failure in step 'chunk'" in doc["error"]
        assert "gave up after 4 deliveries" in doc["error"] and doc["step"] == "chunk"
        # The previous version is still the live one, untouched.
        assert (doc["version"], doc["ready_version"], doc["chunk_count"]) == (2, 1, v1["chunk_count"])
        assert await chunks(db, tenant.entity_id, "wf-dlq") == v1_chunks

        found = None
        for _ in range(10):
            out = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                      MessageAttributeNames=["All"])
            for message in out.get("Messages", []):
                refs = object_refs(json.loads(message["Body"]))
                if [(r.entity_id, r.document_id, r.version) for r in refs] == [(tenant.entity_id, "wf-dlq", 2)]:
                    found = message
                    sqs.delete_message(QueueUrl=dlq, ReceiptHandle=message["ReceiptHandle"])
            if found:
                break
        assert found is not None, "the message did not reach the dead-letter queue"
        assert "injected transient failure" in found["MessageAttributes"]["error"]["StringValue"]
        assert found["MessageAttributes"]["attempts"]["StringValue"] == "4"

        assert huge["status"] == "failed" and "limit is 100000 bytes (MAX_DOCUMENT_BYTES)" in huge["error"]


async def test_large_step_outputs_live_in_the_bucket_until_the_run_ends(stack, tenant, db):
    text = document([paragraph(f"topic{i}") for i in range(100)])  # ~70 KB of text, 100 chunks
    put_document(tenant, "wf-large", text)
    doc = await wait_document(tenant, "wf-large")
    assert (doc["status"], doc["chunk_count"]) == ("ready", 100)
    run_id = (await document_row(db, tenant.entity_id, "wf-large"))["run_id"]
    await wait_for(lambda: run_status(stack, run_id)["status"] == "complete")
    outputs = {r["name"]: r["output"] for r in await db.fetch("SELECT name, output FROM workflow_steps "
                                                              "WHERE run_id = %s", (run_id,))}
    text_key = outputs["extract"]["text"]["key"]           # checkpoints hold keys, not the text...
    vectors_key = outputs["embed"]["vectors"]["key"]       # ...nor 100 vectors
    assert text_key.startswith(artifacts_prefix(tenant.entity_id, "wf-large") + "v1-")
    assert outputs["embed"]["vectors"]["size"] == 100 * 384 * 4
    assert outputs["delete-stale"]["artifacts_deleted"] >= 2
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region="us-east-1", access_key_id="edgeindex",
                    secret_access_key="edgeindex")
    listed = s3.list_objects_v2(Bucket="edgeindex-documents", Prefix=artifacts_prefix(tenant.entity_id, "wf-large"))
    assert listed.get("KeyCount", 0) == 0 and vectors_key  # removed once the document was ready
    rows = await chunks(db, tenant.entity_id, "wf-large")
    assert [r["content"] for r in rows] == text.split("\n\n")


async def test_recovery_after_a_stack_restart(stack, tenant, db):
    """What ``edgeindex dev`` does after a restart, when moto has lost its queue messages."""
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region="us-east-1", access_key_id="edgeindex",
                    secret_access_key="edgeindex")
    where = "entity_id = %s AND id = %s"
    stack.stop_worker("ingest")
    try:
        put_document(tenant, "rc-waiting", "Uploaded while the ingest worker was down.")
        put_document(tenant, "rc-processing", "Being processed when the stack stopped.")
        put_document(tenant, "rc-lost", "Being processed, and its object was not in the last snapshot.")
        put_document(tenant, "rc-lost-upload", "Uploaded (acknowledged), and not in the last snapshot.")
        status, _ = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads",
                                       {"document_id": "rc-never", "content_type": "text/plain", "size_bytes": 5})
        assert status == 201  # a presigned URL nobody used (yet)
        for name in ("rc-processing", "rc-lost"):
            await db.execute(f"UPDATE documents SET status = 'processing' WHERE {where}", (tenant.entity_id, name))
        for name in ("rc-lost", "rc-lost-upload"):
            s3.delete_object(Bucket="edgeindex-documents",
                             Key=object_key(tenant.entity_id, name, 1, name, await generation(db, tenant.entity_id, name)))

        requeued, lost = requeue_unfinished_sync(stack.config, dsn=stack.dsn, s3_endpoint=stack.s3_endpoint,
                                                 sqs_endpoint=stack.sqs_endpoint)
        assert requeued >= 2 and lost >= 2  # (other tests' leftovers may add to both)
        for name in ("rc-lost", "rc-lost-upload"):
            row = await document_row(db, tenant.entity_id, name)
            assert (row["status"], row["step"], row["error"]) == ("failed", "upload", LOST)
        assert (await document_row(db, tenant.entity_id, "rc-never"))["status"] == "pending"
    finally:
        stack.start_worker("ingest")
        stack.wait_healthy("ingest")
    for name in ("rc-waiting", "rc-processing"):
        assert (await wait_document(tenant, name))["status"] == "ready"
    assert (await document_row(db, tenant.entity_id, "rc-never"))["status"] == "pending"
