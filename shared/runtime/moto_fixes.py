"""Fixes to the embedded moto's SQS, S3 key store and request dispatch, for the dev stack (``edgeindex dev``,
the test and bench stacks). They patch moto's in-process backend and server, which only the dev stack
starts; a real S3 or SQS is never touched, and what they remove is the emulator's own overhead or races,
not work S3 or SQS would do.

1. A lost message. moto's ``Queue.add_message`` appends under the queue's ``_messages_lock``, but
   ``Queue.delete_message`` rebuilds the list without it, so a message another request thread sends
   between the rebuild and its assignment is dropped (bucket notifications and the ingest worker's
   deletes meet there under load). The delete holds the same lock (a ``Condition`` over an ``RLock``,
   so moto's own nested calls still take it).
2. A delivery's retention. moto reads the queue's retention period through ``get_queue_attributes``,
   which computes every attribute, each approximate count a walk over every message with a clock read:
   the largest cost of a receive under load. The replacement reads ``queue.message_retention_period``
   itself (the same value, the same comparison).
3. A send's one flag. ``send_message`` reads ``queue.attributes.get("ContentBasedDeduplication")``
   (twice more for a FIFO queue), again computing every attribute, for a flag that exists on FIFO queues
   only. While a send runs in a thread, ``Queue.attributes`` answers that thread with the flag alone,
   rendered as moto renders it (``_send_flags``); every other caller, ``GetQueueAttributes`` included,
   still gets every attribute.
4. A failed receive. moto's ``receive_message`` iterates over and mutates the queue's pending message
   groups without any lock while another thread's delete, receive or visibility change mutates them
   (``RuntimeError: Set changed size during iteration``, answered as a 500). The receive's scan and a
   visibility change hold the queue's ``_messages_lock`` too; a long poll's wait (``wait_for_messages``,
   a ``Condition.wait``) still releases it, so sends and deletes go on while a consumer polls.
5. Which backend a request is for. Per request, moto's ``DomainDispatcherApplication`` lists its package
   folder (~200 entries) and tries every service's URL patterns for the Host. The answer depends on the
   host alone, so it is kept per host (up to ``HOST_MEMO`` hosts; past that, computed each time).
6. A failed listing. moto's S3 key store (``_VersionedKeyStore``) iterates over a copy of its keys but
   looks each key up again in the live store: a key deleted meanwhile raises ``KeyError`` (a 500). Its
   ``items`` and ``values`` read the versions from the same copy, so a listing is the store as it was
   when the listing began, which is no less than S3's own listings promise.
"""

from __future__ import annotations

import threading

_APPLIED = False
HOST_MEMO = 256
_sending = threading.local()  # .flags_only: this thread is inside a send_message


def _send_flags(queue) -> dict:
    """What ``send_message`` reads of ``Queue.attributes``, as moto's ``attributes`` renders it: the
    FIFO flag ``ContentBasedDeduplication`` (a bool as "true"/"false"), absent on a standard queue."""
    if not queue.fifo_queue:
        return {}
    value = queue.content_based_deduplication
    return {"ContentBasedDeduplication": str(value).lower() if isinstance(value, bool) else value}


def apply() -> None:
    """Patch moto's SQS backend and its server's dispatch in this process (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    from moto.core.utils import unix_time
    from moto.sqs.models import Queue, SQSBackend

    def is_message_valid_based_on_retention_period(self, queue_name: str, message) -> bool:
        retention_period = self.get_queue(queue_name).message_retention_period
        return retention_period + message.sent_timestamp / 1000 > unix_time()

    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period

    unlocked_delete = Queue.delete_message

    def delete_message(self, receipt_handle: str) -> None:
        with self._messages_lock:  # the lock add_message appends under: no append lost to the rebuild
            unlocked_delete(self, receipt_handle)

    Queue.delete_message = delete_message

    unlocked_receive = SQSBackend.receive_message
    unlocked_visibility = SQSBackend.change_message_visibility

    def receive_message(self, queue_name: str, *args, **kwargs):
        # the pending set is read and changed under the lock its other writers (delete) hold; the
        # poll's wait releases it (Condition.wait on the RLock), so nobody waits out a long poll
        with self.get_queue(queue_name)._messages_lock:
            return unlocked_receive(self, queue_name, *args, **kwargs)

    def change_message_visibility(self, queue_name: str, *args, **kwargs) -> None:
        with self.get_queue(queue_name)._messages_lock:
            return unlocked_visibility(self, queue_name, *args, **kwargs)

    SQSBackend.receive_message = receive_message
    SQSBackend.change_message_visibility = change_message_visibility

    every_attribute = Queue.attributes.fget

    def attributes(self):
        if getattr(_sending, "flags_only", False):
            return _send_flags(self)
        return every_attribute(self)

    Queue.attributes = property(attributes)
    unpatched_send = SQSBackend.send_message

    def send_message(self, *args, **kwargs):
        outer = getattr(_sending, "flags_only", False)
        _sending.flags_only = True
        try:
            return unpatched_send(self, *args, **kwargs)
        finally:
            _sending.flags_only = outer

    SQSBackend.send_message = send_message

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    backend_for_host = DomainDispatcherApplication.get_backend_for_host

    def get_backend_for_host(self, host):
        memo = self.__dict__.setdefault("_edgeindex_hosts", {})
        try:
            return memo[host]
        except KeyError:
            pass
        found = backend_for_host(self, host)
        if len(memo) < HOST_MEMO:
            memo[host] = found
        return found

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host
    _list_from_one_copy()
    _APPLIED = True


def _list_from_one_copy() -> None:
    """Point 6: every key and its newest version from one copy of the store (a key with no version left
    is skipped, where moto raised ``IndexError``)."""
    from moto.s3.utils import _VersionedKeyStore

    def items(self):
        for key, versions in self._self_iterable().items():
            if versions:
                yield key, versions[-1]

    def values(self):
        for _key, newest in items(self):
            yield newest

    _VersionedKeyStore.items = _VersionedKeyStore.iteritems = items
    _VersionedKeyStore.values = _VersionedKeyStore.itervalues = values
