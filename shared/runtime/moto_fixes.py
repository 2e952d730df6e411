"""Fixes to the embedded moto's SQS, S3 key store and request dispatch, applied by the dev stack only
(``edgeindex dev``, the test and bench stacks); a real S3 or SQS is never touched.

Races (each answered a request wrongly under concurrent load):
1. ``Queue.delete_message`` rebuilds the message list without the lock ``add_message`` appends under,
   dropping a message sent meanwhile: the delete takes that lock (a ``Condition`` over an ``RLock``).
2. ``receive_message`` iterates over the pending message groups while other threads change them
   (``Set changed size during iteration``, a 500): the receive's scan and a visibility change take the
   queue's lock too; a long poll's wait still releases it.
3. The S3 key store iterates over a copy of its keys but looks each up in the live store (a
   ``KeyError`` when a key is deleted meanwhile): its ``items`` and ``values`` read from the same copy.

Emulator overhead (same answers, less work):
4. A delivery's retention check and 5. a send's ``ContentBasedDeduplication`` flag read one value
   through ``Queue.attributes``, which computes every attribute and walks every message with a clock
   read: the check reads ``message_retention_period`` itself, and a send's thread gets the flag alone
   (``_send_flags``); ``GetQueueAttributes`` still gets every attribute.
6. Per request, moto lists its package folder and tries every service's URL patterns for the Host:
   the answer depends on the host alone, so it is kept per host (up to ``HOST_MEMO`` hosts).
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
