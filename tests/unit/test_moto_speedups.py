"""The dev stack's two patches to moto's SQS (runtime/moto_speedups.py): the same deliveries without
computing every queue attribute per delivered message (the speed patch), and a queue's delete holding the
lock sends append under, so a message sent meanwhile is not dropped (the lost-message fix)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from moto.sqs.models import SQSBackend

from edgeindex.runtime import moto_speedups

ORIGINAL = SQSBackend.is_message_valid_based_on_retention_period


@pytest.fixture
def sqs():
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _backend_and_queue(sqs, retention: int):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    sqs.create_queue(QueueName="q", Attributes={"MessageRetentionPeriod": str(retention)})
    return sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]


def test_the_patch_judges_retention_as_moto_does(sqs):
    moto_speedups.apply()
    patched = SQSBackend.is_message_valid_based_on_retention_period
    assert patched is not ORIGINAL
    backend = _backend_and_queue(sqs, retention=60)
    sqs.send_message(QueueUrl=sqs.get_queue_url(QueueName="q")["QueueUrl"], MessageBody="fresh")
    [message] = backend.get_queue("q")._messages
    assert patched(backend, "q", message) is True
    assert ORIGINAL(backend, "q", message) is True
    message.sent_timestamp -= 61_000  # older than the retention period
    assert patched(backend, "q", message) is False
    assert ORIGINAL(backend, "q", message) is False


def test_a_patched_receive_delivers_a_kept_message_and_not_an_expired_one(sqs):
    moto_speedups.apply()
    backend = _backend_and_queue(sqs, retention=60)
    url = sqs.get_queue_url(QueueName="q")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="kept")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url).get("Messages", [])] == ["kept"]
    sqs.send_message(QueueUrl=url, MessageBody="expired")
    [expired] = [m for m in backend.get_queue("q")._messages if m.body == "expired"]
    expired.sent_timestamp -= 61_000
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []



def test_a_delete_holds_the_lock_a_send_appends_under(sqs):
    """moto's delete rebuilt the message list without the lock its sends append under, so a send from
    another thread landing between the rebuild and its assignment was dropped (a bulk upload's version
    left pending forever). While the patched delete runs, no other thread can take that lock."""
    import threading

    moto_speedups.apply()
    backend = _backend_and_queue(sqs, retention=60)
    url = sqs.get_queue_url(QueueName="q")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="done")
    sqs.send_message(QueueUrl=url, MessageBody="other")
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    [handle] = [m["ReceiptHandle"] for m in received if m["Body"] == "done"]
    queue = backend.get_queue("q")
    message_type = type(queue._messages[0])
    original = message_type.had_receipt_handle
    free_to_others: list[bool] = []

    def try_lock() -> None:
        taken = queue._messages_lock.acquire(blocking=False)
        free_to_others.append(taken)
        if taken:
            queue._messages_lock.release()

    def had_receipt_handle(message, receipt_handle):
        # called through the delete, for every message: could a send's thread append right now?
        other = threading.Thread(target=try_lock)
        other.start()
        other.join()
        return original(message, receipt_handle)

    message_type.had_receipt_handle = had_receipt_handle
    try:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    finally:
        message_type.had_receipt_handle = original
    assert len(free_to_others) >= 2 and not any(free_to_others)
    assert [m.body for m in queue._messages] == ["other"]
