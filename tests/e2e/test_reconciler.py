"""The ingest reconciler (``edgeindex.ingest.reconciler``) on a real stack: a version whose bucket
notification was lost is ingested within the bound; a duplicate event runs nothing twice; a version
whose run is in progress (its lock held elsewhere, or its message held by this process) is not re-sent.

A lost notification is made exactly: the object is stored straight into the embedded moto's bucket with
``disable_notification`` (the client's PUT reached S3, S3's event never reached the queue). The module
restarts the package stack's ingest worker with the sweep shortened by config (``EDGEINDEX_VAR_RECONCILE_*``)
and restores a normal one afterwards.
"""

from __future__ import annotations

import json
import time

import psycopg
import pytest
from edgeindex import object_keys
from edgeindex.bindings import aws
from edgeindex.holds import Hold
from edgeindex.ingest.events import object_created

from ..helpers import TOPICS, Client, chunks, document, generation, paragraph, put_document, wait_document, wait_for

TEXT = document([paragraph(t) for t in TOPICS[:2]])  # two chunks
EVERY, AFTER, LEASE = 0.5, 2.0, 2.0
STEPS = ["extract", "chunk", "diff", "embed", "summarize", "upsert", "delete-stale"]


@pytest.fixture(scope="module")
def reconciling(stack):
    """The ingest worker with a sweep every EVERY s, pending versions re-sent after AFTER s, runs after LEASE s."""
    stack.stop_worker("ingest")
    stack.start_worker("ingest", extra_env={"EDGEINDEX_VAR_RECONCILE_EVERY_SECONDS": str(EVERY),
                                            "EDGEINDEX_VAR_RECONCILE_AFTER_SECONDS": str(AFTER),
                                            "EDGEINDEX_VAR_RECONCILE_LEASE_SECONDS": str(LEASE)})
    try:
        stack.wait_healthy("ingest")
        yield Client(stack.url("ingest"), stack.admin_key)
    finally:
        stack.stop_worker("ingest")
        stack.start_worker("ingest")
        stack.wait_healthy("ingest")


def store_without_notification(stack, key: str, body: bytes) -> None:
    """The object lands in the bucket and no object-created event is sent (moto's own switch)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    bucket = stack.config.worker("ingest").r2_buckets[0].bucket_name
    s3_backends[DEFAULT_ACCOUNT_ID]["global"].put_object(bucket, key, body, disable_notification=True)


def request_upload(tenant, document_id: str, body: bytes) -> dict:
    """A presigned upload's pending version (its URL is never used: the test stores the bytes itself)."""
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", {
        "document_id": document_id, "filename": f"{document_id}.txt", "content_type": "text/plain",
        "size_bytes": len(body)})
    assert status == 201 and answer["status"] == "pending", answer
    return answer


def outcomes(admin: Client, tenant, document_id: str) -> list[dict]:
    status, body = admin.get(f"/outcomes?entity_id={tenant.entity_id}&document_id={document_id}")
    assert status == 200, body
    return body["outcomes"]


def reconciler(admin: Client) -> dict:
    status, body = admin.get("/reconciler")
    assert status == 200, body
    return body


def resent(admin: Client, tenant, document_id: str) -> list[dict]:
    return [r for r in reconciler(admin)["recent"]
            if (r["entity_id"], r["document_id"]) == (tenant.entity_id, document_id)]


def send_event(stack, key: str, size: int) -> None:
    sqs = aws.client("sqs", endpoint=stack.sqs_endpoint, region="us-east-1", access_key_id="edgeindex",
                     secret_access_key="edgeindex")
    queue = stack.config.worker("ingest").queues.consumers[0].queue
    sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName=queue)["QueueUrl"],
                     MessageBody=json.dumps(object_created(stack.config.worker("ingest").r2_buckets[0].bucket_name,
                                                           key, size=size)))


def run_status(admin: Client, run_id: str) -> dict:
    from urllib.parse import quote

    status, body = admin.get(f"/runs?id={quote(run_id, safe='')}")
    assert status == 200, body
    return body


async def test_a_version_whose_notification_was_lost_is_ingested_within_the_bound(stack, reconciling, tenant):
    admin = reconciling
    body = TEXT.encode()
    answer = request_upload(tenant, "rc-lost", body)
    stored_at = time.time()
    store_without_notification(stack, answer["object_key"], body)

    doc = await wait_document(tenant, "rc-lost", timeout=AFTER + 60)
    assert (doc["status"], doc["chunk_count"], doc["chunks_embedded"]) == ("ready", 2, 2), doc
    [entry] = resent(admin, tenant, "rc-lost")  # re-sent once, by the reconciler, after the bound
    assert entry["version"] == 1 and entry["reason"].startswith("pending") and entry["times"] == 1
    assert entry["at"] - stored_at >= AFTER - 1  # LastModified has whole seconds
    # the message's outcome is recorded once the run has acked it, just after the document reads ready
    await wait_for(lambda: outcomes(admin, tenant, "rc-lost") != [], timeout=30)
    assert [(o["version"], o["action"]) for o in outcomes(admin, tenant, "rc-lost")] == [(1, "ack")]


async def test_a_duplicate_event_runs_nothing_twice(stack, reconciling, tenant, db):
    """Two copies of one version's event while its run is in progress: the second finds the run's lock
    taken and comes back later, and then finds the run complete. Every step ran once."""
    admin = reconciling
    body = TEXT.encode()
    answer = request_upload(tenant, "rc-dup", body)
    run_id = object_keys.run_id(tenant.entity_id, "rc-dup", 1, await generation(db, tenant.entity_id, "rc-dup"))
    async with Hold(db, "ingest:extract", tenant.entity_id, "rc-dup") as hold:
        store_without_notification(stack, answer["object_key"], body)
        send_event(stack, answer["object_key"], len(body))
        await hold.reached()  # the first copy's run holds its lock, before its first step
        send_event(stack, answer["object_key"], len(body))
        await wait_for(lambda: any(o["reason"] == "run in progress elsewhere"
                                   for o in outcomes(admin, tenant, "rc-dup")), timeout=60)
    doc = await wait_document(tenant, "rc-dup")
    assert (doc["status"], doc["chunk_count"]) == ("ready", 2), doc
    # the second copy comes back (after IN_PROGRESS_RETRY_SECONDS) and acks at once
    await wait_for(lambda: [o["action"] for o in outcomes(admin, tenant, "rc-dup")][-1:] == ["ack"]
                   and len(outcomes(admin, tenant, "rc-dup")) >= 3, timeout=90)
    run = run_status(admin, run_id)
    assert run["executed_here"] == [STEPS]  # one invocation ran the steps; the others replayed nothing
    assert [(s["name"], s["attempts"]) for s in run["steps"]] == [(s, 1) for s in STEPS]
    rows = await chunks(db, tenant.entity_id, "rc-dup")
    assert [r["position"] for r in rows] == [0, 1] and len({r["id"] for r in rows}) == 2


async def test_a_version_in_progress_is_not_resent(stack, reconciling, tenant, db):
    """- ``rc-held``: processing, its run idle for an hour, and its lock held by another session (as another
      ingest process running it would): never re-sent; re-sent once the lock is let go (that process died).
    - ``rc-event``: pending, its event received by this process and held before it is looked at: never re-sent."""
    admin = reconciling
    body = TEXT.encode()
    answer = request_upload(tenant, "rc-held", body)
    store_without_notification(stack, answer["object_key"], body)
    run_id = object_keys.run_id(tenant.entity_id, "rc-held", 1, await generation(db, tenant.entity_id, "rc-held"))
    async with await psycopg.AsyncConnection.connect(stack.dsn, autocommit=True) as other_process, \
            Hold(db, "ingest:event", tenant.entity_id, "rc-event") as hold:
        await other_process.execute("SELECT pg_advisory_lock(hashtextextended('workflow:' || %s, 0))", (run_id,))
        await db.execute("INSERT INTO workflow_runs (id, workflow, params, status, attempts, updated_at) "
                         "VALUES (%s, 'ingest-document', '{}', 'running', 1, now() - interval '1 hour')", (run_id,))
        await db.execute("UPDATE documents SET status = 'processing', run_id = %s, uploaded_at = now() - interval "
                         "'1 hour' WHERE entity_id = %s AND id = %s", (run_id, tenant.entity_id, "rc-held"))
        put_document(tenant, "rc-event", TEXT)
        await hold.reached()
        # sweeps that ran once both versions were past every bound
        past = time.time() + max(AFTER, LEASE) + 1
        await wait_for(lambda: (r := reconciler(admin))["last_sweep_at"] is not None
                       and r["last_sweep_at"] > past + 4 * EVERY, timeout=60)
        swept = reconciler(admin)
        assert swept["sweeps"] >= 4 and swept["skipped_backlog"] < swept["sweeps"]
        assert resent(admin, tenant, "rc-held") == [] and resent(admin, tenant, "rc-event") == []
        assert outcomes(admin, tenant, "rc-held") == []
        await other_process.execute("SELECT pg_advisory_unlock(hashtextextended('workflow:' || %s, 0))", (run_id,))
        # its holder gone, the stopped run is re-sent and resumed
        doc = await wait_document(tenant, "rc-held", timeout=60)
        assert (doc["status"], doc["chunk_count"]) == ("ready", 2), doc
        [entry] = resent(admin, tenant, "rc-held")
        assert entry["reason"].startswith("processing, its run idle")
        assert resent(admin, tenant, "rc-event") == []
    doc = await wait_document(tenant, "rc-event")
    assert doc["status"] == "ready"
    await wait_for(lambda: outcomes(admin, tenant, "rc-event") != [], timeout=30)  # recorded after ready
    assert [o["action"] for o in outcomes(admin, tenant, "rc-event")] == ["ack"]
    assert resent(admin, tenant, "rc-event") == []
