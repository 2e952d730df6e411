"""The dev stack's fixes to moto (runtime/moto_fixes.py): a queue's delete holds the lock sends append
under, so a message sent meanwhile is not dropped; a receive's scan cannot meet a concurrent change; and an
S3 listing survives a concurrent delete."""

from __future__ import annotations

import boto3
import pytest
from edgeindex.runtime import moto_fixes
from moto import mock_aws


@pytest.fixture
def sqs():
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def _backend_and_queue(sqs, retention: int):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    sqs.create_queue(QueueName="q", Attributes={"MessageRetentionPeriod": str(retention)})
    return sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]


def test_a_delete_holds_the_lock_a_send_appends_under(sqs):
    """moto's delete rebuilds the message list without the lock its sends append under, so a send from
    another thread landing between the rebuild and its assignment is dropped (a bulk upload's version
    left pending forever). While the patched delete runs, no other thread can take that lock."""
    import threading

    moto_fixes.apply()
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


def test_a_receive_scans_the_pending_messages_while_no_other_thread_can_change_them(sqs):
    """moto's receive copies the pending message groups, iterating the pending set, while a delete on
    another request thread discards from it: ``RuntimeError: Set changed size during iteration`` (a 500
    to the consumer, seen under load). Here another thread deletes a pending message right in that
    iteration if it can take the queue's lock; the patched receive holds it, so the delete waits and
    the receive answers."""
    import threading

    moto_fixes.apply()
    backend = _backend_and_queue(sqs, retention=60)
    url = sqs.get_queue_url(QueueName="q")["QueueUrl"]
    for body in ("a", "b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    pending = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
    assert len(pending) == 2
    queue = backend.get_queue("q")
    handle = pending[0]["ReceiptHandle"]
    deleted_inside: list[bool] = []

    def delete_if_free() -> None:
        # a delete request's thread, arriving while the receive iterates the pending set
        if queue._messages_lock.acquire(blocking=False):
            try:
                queue.delete_message(handle)
            finally:
                queue._messages_lock.release()
            deleted_inside.append(True)
        else:
            deleted_inside.append(False)

    class Hooked(type(queue._messages[0])):
        @property
        def group_id(self):  # read for each pending message while the receive copies the groups
            if not deleted_inside:
                other = threading.Thread(target=delete_if_free)
                other.start()
                other.join()
            return None

    hooked = next(iter(queue._pending_messages))
    hooked.__class__ = Hooked
    try:
        [third] = backend.receive_message("q", 10, 0, 30)
    finally:
        hooked.__class__ = Hooked.__mro__[1]
    assert deleted_inside == [False]
    assert third.body == "c"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)  # the delete that waited goes through after
    assert sorted(m.body for m in queue._messages) == sorted({"a", "b", "c"} - {pending[0]["Body"]})


def test_a_listing_survives_a_key_deleted_while_it_runs():
    """moto's S3 listing copies its keys, then looks each up in the live store: a delete in between is a
    KeyError (a 500). The listing reads the store as it was when it began."""
    moto_fixes.apply()
    from moto.s3.utils import _VersionedKeyStore

    class Version:  # what the store keeps per key: FakeKeys, disposed of when popped
        def __init__(self, name):
            self.name = name

        def dispose(self):
            pass

    store = _VersionedKeyStore()
    for name in ("a", "b", "c"):
        store[name] = Version(name + "1")
    store["b"] = Version("b2")
    listing = store.items()
    first = next(listing)
    store.pop("c")  # another request thread deletes a key the listing has not reached yet
    listed = [first] + list(listing)
    assert [(key, version.name) for key, version in listed] == [("a", "a1"), ("b", "b2"), ("c", "c1")]
    assert [version.name for version in store.values()] == ["a1", "b2"]
