"""Fixes to the embedded moto's SQS and S3 key store, applied by the dev stack only
(``edgeindex dev``, the test and bench stacks); a real S3 or SQS is never touched.

Races (each answered a request wrongly under concurrent load):
1. ``Queue.delete_message`` rebuilds the message list without the lock ``add_message`` appends under,
   dropping a message sent meanwhile: the delete takes that lock (a ``Condition`` over an ``RLock``).
2. ``receive_message`` iterates over the pending message groups while other threads change them
   (``Set changed size during iteration``, a 500): the receive's scan and a visibility change take the
   queue's lock too; a long poll's wait still releases it.
3. The S3 key store iterates over a copy of its keys but looks each up in the live store (a
   ``KeyError`` when a key is deleted meanwhile): its ``items`` and ``values`` read from the same copy.
"""

from __future__ import annotations

_APPLIED = False


def apply() -> None:
    """Patch moto's SQS backend and S3 key store in this process (idempotent)."""
    global _APPLIED
    if _APPLIED:
        return
    from moto.sqs.models import Queue, SQSBackend

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

    _list_from_one_copy()
    _APPLIED = True


def _list_from_one_copy() -> None:
    """Point 3: every key and its newest version from one copy of the store (a key with no version left
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
