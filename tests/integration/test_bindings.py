"""Bindings against the real services of the session stack: moto over HTTP, embedded Postgres, diskcache."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid

import pytest
from edgeindex.bindings import aws
from edgeindex.bindings.bucket import S3Bucket
from edgeindex.bindings.kv import DiskKV
from edgeindex.bindings.queue import Consumer, SQSQueue, backoff
from edgeindex.config import QueueConsumer
from edgeindex.ingest.events import object_refs
from edgeindex.object_keys import object_key


@pytest.fixture(scope="module")
def s3(stack):
    s = stack.config.services.s3
    return aws.client("s3", endpoint=stack.s3_endpoint, region=s.region, access_key_id=s.access_key_id,
                      secret_access_key=s.secret_access_key)


@pytest.fixture(scope="module")
def sqs(stack):
    s = stack.config.services.sqs
    return aws.client("sqs", endpoint=stack.sqs_endpoint, region=s.region, access_key_id=s.access_key_id,
                      secret_access_key=s.secret_access_key)


@pytest.fixture(scope="module")
def bucket(s3):
    name = f"t-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    return S3Bucket(s3, name)


def make_queue(sqs, name: str) -> SQSQueue:
    sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"})
    return SQSQueue(sqs, name)


async def test_bucket_put_get_head_list_delete(bucket):
    info = await bucket.put("a/b.txt", b"hello", content_type="text/plain", metadata={"doc": "1"})
    assert info.etag
    assert await bucket.get("a/b.txt") == b"hello"
    head = await bucket.head("a/b.txt")
    assert head.size == 5 and head.content_type == "text/plain" and head.metadata == {"doc": "1"}
    assert [o.key for o in await bucket.list("a/")] == ["a/b.txt"]
    await bucket.delete("a/b.txt")
    assert await bucket.get("a/b.txt") is None
    assert await bucket.head("a/b.txt") is None


async def test_presigned_put_and_get_over_http(bucket):
    url = bucket.presign_put("p/doc.md", content_type="text/markdown")
    req = urllib.request.Request(url, data=b"# title", method="PUT", headers={"Content-Type": "text/markdown"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200
    with urllib.request.urlopen(bucket.presign_get("p/doc.md")) as resp:
        assert resp.read() == b"# title"


async def test_multipart_upload_with_presigned_parts(bucket):
    key = "m/big.txt"
    upload_id = await bucket.create_multipart(key, content_type="text/plain")
    part1, part2 = b"a" * (5 * 1024 * 1024), b"b" * 1000  # S3's 5 MiB minimum for all but the last part
    etags = []
    for number, body in ((1, part1), (2, part2)):
        req = urllib.request.Request(bucket.presign_part(key, upload_id, number), data=body, method="PUT",
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req) as resp:
            etags.append((number, resp.headers["ETag"]))
    info = await bucket.complete_multipart(key, upload_id, etags)
    assert info.size == len(part1) + len(part2)
    assert (await bucket.get(key))[-1000:] == part2


async def test_queue_send_receive_ack(sqs):
    queue = make_queue(sqs, f"q-{uuid.uuid4().hex[:8]}")
    await queue.send_batch([{"n": i} for i in range(12)])
    consumer = Consumer(queue, QueueConsumer(queue=queue.name, max_batch_size=12, max_batch_timeout=1),
                        dead_letter=None, poll_wait_seconds=1)
    seen = []

    async def handler(batch):
        for m in batch.messages:
            seen.append(m.body["n"])
            m.ack()

    while len(seen) < 12:
        await consumer.run_once(handler)
    assert sorted(seen) == list(range(12))
    assert await queue.depth() == {"visible": 0, "in_flight": 0}


async def test_queue_retry_backoff_then_dead_letter(sqs):
    queue = make_queue(sqs, f"q-{uuid.uuid4().hex[:8]}")
    dlq = make_queue(sqs, f"dlq-{uuid.uuid4().hex[:8]}")
    settings = QueueConsumer(queue=queue.name, max_batch_size=1, max_batch_timeout=0, max_retries=2,
                             dead_letter_queue=dlq.name, retry_delay=0)
    consumer = Consumer(queue, settings, dead_letter=dlq, poll_wait_seconds=1)
    await queue.send({"poison": True})
    attempts = []

    async def failing(batch):
        attempts.append(batch.messages[0].attempts)
        raise RuntimeError("cannot handle this")

    for _ in range(20):
        await consumer.run_once(failing)
        if len(attempts) == 3:
            break
    assert attempts == [1, 2, 3]  # first delivery + max_retries
    raw = await dlq.receive(max_messages=1, wait_seconds=2, visibility_timeout=30)
    assert json.loads(raw[0]["Body"]) == {"poison": True}
    assert "cannot handle this" in raw[0]["MessageAttributes"]["error"]["StringValue"]
    assert await queue.depth() == {"visible": 0, "in_flight": 0}


async def test_explicit_retry_keeps_message_hidden_for_delay(sqs):
    queue = make_queue(sqs, f"q-{uuid.uuid4().hex[:8]}")
    consumer = Consumer(queue, QueueConsumer(queue=queue.name, max_batch_size=1, max_batch_timeout=0,
                                             max_retries=5), dead_letter=None, poll_wait_seconds=1)
    await queue.send({"x": 1})

    async def later(batch):
        batch.messages[0].retry(delay_seconds=30)

    await consumer.run_once(later)
    assert (await queue.depth())["in_flight"] == 1
    assert (await consumer.next_batch()).messages == []


def test_backoff_grows_and_is_capped():
    assert [backoff(n, 1) for n in (1, 2, 3, 4)] == [1, 2, 4, 8]
    assert backoff(30, 5, cap=900) == 900


def test_kv_get_put_ttl_delete_list(tmp_path):
    kv = DiskKV(tmp_path / "kv", namespace="t")
    other = DiskKV(tmp_path / "kv", namespace="other")
    kv.put("a:1", {"v": 1})
    kv.put("a:2", [2])
    kv.put("b:1", "x", ttl=0.05)
    other.put("a:9", 9)
    assert kv.get("a:1") == {"v": 1}
    assert sorted(kv.list("a:")) == ["a:1", "a:2"]  # namespaces do not leak into each other
    import time

    time.sleep(0.1)
    assert kv.get("b:1") is None
    assert kv.delete("a:1", "missing") == 1
    assert kv.get("a:1", "gone") == "gone"
    assert kv.incr("n") == 1 and kv.incr("n", 2) == 3


def test_kv_shared_between_processes(tmp_path):
    import subprocess
    import sys

    kv = DiskKV(tmp_path / "kv", namespace="t")
    code = ("from edgeindex.bindings.kv import DiskKV; import sys; "
            "DiskKV(sys.argv[1], namespace='t').put('from-child', 42)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "kv")], check=True)
    assert kv.get("from-child") == 42


async def test_an_object_created_under_docs_reaches_a_queue_as_an_event_we_parse(stack, s3, sqs):
    """What provisioning sets up for the ingest queue, on a bucket and queue of this test's own (the
    ingest worker consumes the real one): an object under docs/ arrives as an event naming it, and
    an object elsewhere does not."""
    config = s3.get_bucket_notification_configuration(Bucket="edgeindex-documents")  # as provisioned
    provisioned = config["QueueConfigurations"][0]
    assert provisioned["QueueArn"].endswith(":edgeindex-ingest") and provisioned["Events"] == ["s3:ObjectCreated:*"]

    name = f"evt-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration={"QueueConfigurations": [
        {**{k: v for k, v in provisioned.items() if k in ("Events", "Filter")}, "Id": "t", "QueueArn": arn}]})
    key = object_key("team-a", "reports/q3 results.pdf", 2, "q3_results.pdf")
    s3.put_object(Bucket=name, Key="elsewhere/file.txt", Body=b"not watched")
    s3.put_object(Bucket=name, Key=key, Body=b"watched")
    refs = []
    for _ in range(10):  # bounded: each receive waits up to 2 s for the event
        for message in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2, MaxNumberOfMessages=10).get("Messages", []):
            refs.extend(object_refs(json.loads(message["Body"])))
        if refs:
            break
    assert [(r.entity_id, r.document_id, r.version, r.size) for r in refs] == [
        ("team-a", "reports/q3 results.pdf", 2, len(b"watched"))]


async def test_a_batch_in_hand_stays_hidden_past_its_visibility_timeout(sqs):
    """The consumer extends what it works on: another consumer sees nothing while the handler runs,
    however long; a consumer that dies stops extending, so its messages come back within one timeout."""
    queue = make_queue(sqs, f"q-{uuid.uuid4().hex[:8]}")
    await queue.send_batch([{"n": 1}])
    settings = QueueConsumer(queue=queue.name, max_batch_size=1, max_batch_timeout=0, visibility_timeout=3)
    consumer = Consumer(queue, settings, dead_letter=None, poll_wait_seconds=1)
    other = Consumer(queue, settings, dead_letter=None, poll_wait_seconds=1)
    stolen = []

    async def slow(batch):
        await asyncio.sleep(7)  # the scenario: work longer than two visibility timeouts
        stolen.extend((await other.next_batch()).messages)
        for m in batch.messages:
            m.ack()

    await consumer.run_once(slow)
    assert stolen == []  # hidden the whole time
    assert await queue.depth() == {"visible": 0, "in_flight": 0}
