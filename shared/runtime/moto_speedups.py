"""Two fixes to the embedded moto's SQS, for the dev stack (``edgeindex dev``, the test and bench stacks).

1. A lost message. moto's ``Queue.add_message`` appends under the queue's ``_messages_lock``, but
   ``Queue.delete_message`` rebuilds the list without it (``self._messages = [every other message]``):
   a message another request thread sends between the rebuild and its assignment is dropped. The bucket's
   notifications (a PUT's thread) and the ingest worker's deletes (another thread) meet there under load;
   the likely cause of a full ``scripts/bench_ingest.py`` run that left two bulk-uploaded versions pending
   forever, their messages never delivered (2026-11-24). The delete now holds the same lock (a
   ``Condition`` over an ``RLock``, so moto's own nested calls still take it).

2. Speed.

moto checks each message it is about to deliver against the queue's retention period, and reads
that one attribute through ``get_queue_attributes``, which computes every attribute of the queue
three times over: the approximate counts among them, each a walk over every message in the queue
(in flight ones included) that asks the clock for each. A receive of ten messages from a queue
holding a hundred in flight thus cost thousands of clock reads. py-spy of the process running
moto during ``scripts/bench_ingest.py --limit 1000`` (17:24 UTC): 33% of its samples were
``Queue.attributes`` under ``receive_message``.

The replacement reads ``queue.message_retention_period`` itself: the same value (moto stores it as
an int when the queue is created or its attributes set), the same comparison. Nothing here
touches a real SQS: it patches moto's in-process backend, which only the dev stack starts.
"""

from __future__ import annotations

_APPLIED = False


def apply() -> None:
    """Patch moto's SQS backend in this process (idempotent)."""
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
    _APPLIED = True
