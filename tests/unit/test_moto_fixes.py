"""The dev stack's patches to moto (runtime/moto_fixes.py): the same deliveries without computing every
queue attribute per delivered message, the same sends without computing them per sent message, the same
backend per request without listing moto's package for each, and a queue's delete holding the lock sends
append under, so a message sent meanwhile is not dropped (the lost-message fix), and an S3 listing that a
concurrent delete does not fail."""

from __future__ import annotations

import boto3
import pytest
from edgeindex.runtime import moto_fixes
from moto import mock_aws
from moto.sqs.models import Queue, SQSBackend

ORIGINAL = SQSBackend.is_message_valid_based_on_retention_period
EVERY_ATTRIBUTE = Queue.attributes.fget  # moto's own, before apply() wraps it


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
    moto_fixes.apply()
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
    moto_fixes.apply()
    backend = _backend_and_queue(sqs, retention=60)
    url = sqs.get_queue_url(QueueName="q")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="kept")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=url).get("Messages", [])] == ["kept"]
    sqs.send_message(QueueUrl=url, MessageBody="expired")
    [expired] = [m for m in backend.get_queue("q")._messages if m.body == "expired"]
    expired.sent_timestamp -= 61_000
    assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []



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


@pytest.mark.parametrize("fifo, content_dedup", [(False, None), (True, "false"), (True, "true")])
def test_a_send_reads_the_deduplication_flag_as_moto_renders_it(sqs, fifo, content_dedup):
    moto_fixes.apply()
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    name = "q.fifo" if fifo else "q"
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": content_dedup} if fifo else {}
    sqs.create_queue(QueueName=name, Attributes=attributes)
    queue = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_queue(name)
    every = EVERY_ATTRIBUTE(queue)
    expected = {"ContentBasedDeduplication": every["ContentBasedDeduplication"]} if fifo else {}
    assert "ContentBasedDeduplication" in every or not fifo
    assert moto_fixes._send_flags(queue) == expected
    # and a send behaves as moto's: a FIFO queue without content deduplication still wants its ids
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    if content_dedup == "false":
        with pytest.raises(sqs.exceptions.ClientError):
            sqs.send_message(QueueUrl=url, MessageBody="m", MessageGroupId="g")
    else:
        sqs.send_message(QueueUrl=url, MessageBody="m", **({"MessageGroupId": "g"} if fifo else {}))
        sqs.send_message(QueueUrl=url, MessageBody="m", **({"MessageGroupId": "g"} if fifo else {}))
        # content deduplication drops the second copy, a standard queue keeps both
        assert len(queue._messages) == (1 if fifo else 2)


def test_a_send_does_not_walk_the_queued_messages_but_get_queue_attributes_still_counts_them(sqs):
    """A bucket notification's send computed every queue attribute (the approximate counts walk every
    queued message) to read one FIFO flag; GetQueueAttributes must still count."""
    moto_fixes.apply()
    backend = _backend_and_queue(sqs, retention=60)
    url = sqs.get_queue_url(QueueName="q")["QueueUrl"]
    queue = backend.get_queue("q")
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=str(i))
    walked = []
    message_type = type(queue._messages[0])
    original = message_type.visible

    def visible(message):
        walked.append(message)
        return original.fget(message)

    message_type.visible = property(visible)
    try:
        sqs.send_message(QueueUrl=url, MessageBody="one more")
        assert walked == []
        counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    finally:
        message_type.visible = original
    assert counts["Attributes"]["ApproximateNumberOfMessages"] == "4"
    assert walked


def test_the_backend_for_a_host_is_moto_s_own_and_kept_per_host(monkeypatch):
    """moto lists its package folder and tries every service's URL pattern on every request."""
    moto_fixes.apply()
    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    app = DomainDispatcherApplication(create_backend_app)
    fresh = DomainDispatcherApplication(create_backend_app)
    hosts = ["s3.us-east-1.amazonaws.com", "sqs.us-east-1.amazonaws.com", "s3", "sqs", "moto_api", None,
             "bucket.s3.amazonaws.com", "nothing.example"]
    first = [app.get_backend_for_host(h) for h in hosts]
    assert first[:5] == ["s3", "sqs", "s3", "sqs", "moto_api"] and first[5] is None
    listed = []
    real = backends.list_of_moto_modules
    monkeypatch.setattr(backends, "list_of_moto_modules", lambda: listed.append(1) or real())
    assert [app.get_backend_for_host(h) for h in hosts] == first  # kept: moto's folder not listed again
    assert listed == []
    monkeypatch.setattr(moto_fixes, "HOST_MEMO", 0)  # nothing kept: each answer computed as moto does
    assert [fresh.get_backend_for_host(h) for h in hosts] == first
    assert listed


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
