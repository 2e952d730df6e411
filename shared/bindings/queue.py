"""Queue binding over the SQS protocol (moto server, ElasticMQ, SQS).

Producers send JSON bodies. The consumer mirrors Cloudflare Queues: it collects
up to ``max_batch_size`` messages or waits ``max_batch_timeout``, hands the
batch to the worker's ``queue(batch, env, ctx)`` handler, and settles each
message: ``ack()`` deletes it, ``retry()`` makes it visible again after an
exponential backoff, and a message that has used up ``max_retries`` goes to the
dead-letter queue with the last error attached. A handler that returns without
settling a message acks it; one that raises retries every unsettled message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import faults
from ..config import QueueConsumer
from ..errors import BindingError, ObjectStoreError
from . import aws

log = logging.getLogger(__name__)


class Queue(Protocol):
    name: str

    async def send(self, body: Any, *, delay_seconds: int = 0) -> str: ...
    async def send_batch(self, bodies: list[Any]) -> None: ...


class SQSQueue:
    """A producer binding: ``await env.INGEST_QUEUE.send({...})``."""

    def __init__(self, client, name: str) -> None:
        self._sqs = client
        self.name = name
        self._url: str | None = None

    async def url(self) -> str:
        if self._url is None:
            out = await aws.call(self._sqs.get_queue_url, QueueName=self.name)
            self._url = out["QueueUrl"]
        return self._url

    async def send(self, body: Any, *, delay_seconds: int = 0, attributes: dict[str, str] | None = None) -> str:
        kwargs: dict[str, Any] = {"QueueUrl": await self.url(), "MessageBody": json.dumps(body),
                                  "DelaySeconds": int(delay_seconds)}
        if attributes:
            kwargs["MessageAttributes"] = {k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()}
        out = await aws.call(self._sqs.send_message, **kwargs)
        return out["MessageId"]

    async def send_batch(self, bodies: list[Any]) -> None:
        url = await self.url()
        for start in range(0, len(bodies), 10):
            entries = [{"Id": str(i), "MessageBody": json.dumps(b)} for i, b in enumerate(bodies[start:start + 10])]
            out = await aws.call(self._sqs.send_message_batch, QueueUrl=url, Entries=entries)
            if out.get("Failed"):
                raise BindingError(f"queue {self.name}: {len(out['Failed'])} message(s) not sent: {out['Failed'][0]}")

    async def receive(self, *, max_messages: int, wait_seconds: int, visibility_timeout: int) -> list[dict]:
        out = await aws.call(
            self._sqs.receive_message, QueueUrl=await self.url(), MaxNumberOfMessages=min(10, max_messages),
            WaitTimeSeconds=wait_seconds, VisibilityTimeout=visibility_timeout,
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            MessageAttributeNames=["All"])
        return out.get("Messages", [])

    async def delete(self, receipt_handle: str) -> None:
        await aws.call(self._sqs.delete_message, QueueUrl=await self.url(), ReceiptHandle=receipt_handle)

    async def _in_tens(self, call, receipt_handles: list[str], what: str, **fields) -> int:
        """``call`` (an SQS ``*_batch`` action) over the handles, ten to a request (SQS's bound);
        each entry refused is logged as "could not <what>", and their number returned."""
        url, refused = await self.url(), 0
        for start in range(0, len(receipt_handles), 10):
            entries = [{"Id": str(i), "ReceiptHandle": h, **fields}
                       for i, h in enumerate(receipt_handles[start:start + 10])]
            out = await aws.call(call, QueueUrl=url, Entries=entries)
            for failed in out.get("Failed", []):
                refused += 1
                log.warning("queue %s: could not %s a message: %s", self.name, what, failed)
        return refused

    async def delete_batch(self, receipt_handles: list[str]) -> int:
        """Delete settled messages ten to a request; returns how many SQS refused. A refused one
        comes back after its visibility timeout, and its complete run acks it then."""
        return await self._in_tens(self._sqs.delete_message_batch, receipt_handles, "delete")

    async def set_visibility(self, receipt_handle: str, seconds: int) -> None:
        await aws.call(self._sqs.change_message_visibility, QueueUrl=await self.url(),
                       ReceiptHandle=receipt_handle, VisibilityTimeout=int(seconds))

    async def extend_batch(self, receipt_handles: list[str], seconds: int) -> None:
        """``set_visibility`` for many messages, ten to a request; one that SQS refuses is logged (the
        next beat, or its redelivery, settles it)."""
        await self._in_tens(self._sqs.change_message_visibility_batch, receipt_handles, "extend",
                            VisibilityTimeout=int(seconds))

    async def depth(self) -> dict[str, int]:
        out = await aws.call(self._sqs.get_queue_attributes, QueueUrl=await self.url(),
                             AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
        attrs = out["Attributes"]
        return {"visible": int(attrs.get("ApproximateNumberOfMessages", 0)),
                "in_flight": int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0))}

    def describe(self) -> dict:
        return {"type": "queue_producer", "queue": self.name, "endpoint": self._sqs.meta.endpoint_url}


@dataclass
class Message:
    """One delivered message; ``attempts`` counts deliveries, starting at 1."""

    id: str
    body: Any
    attempts: int
    timestamp: float
    receipt_handle: str
    outcome: str | None = None  # "ack" | "retry"
    retry_delay: float | None = None
    error: str | None = None

    def ack(self) -> None:
        self.outcome = "ack"

    def retry(self, *, delay_seconds: float | None = None, error: str | None = None) -> None:
        self.outcome = "retry"
        self.retry_delay = delay_seconds
        self.error = error


@dataclass
class MessageBatch:
    queue: str
    messages: list[Message] = field(default_factory=list)

    def ack_all(self) -> None:
        for message in self.messages:
            if message.outcome is None:
                message.ack()

    def retry_all(self, *, error: str | None = None) -> None:
        for message in self.messages:
            if message.outcome is None:
                message.retry(error=error)


def backoff(attempt: int, base: float, cap: float = 900.0) -> int:
    """Delay before delivery ``attempt + 1``: base, 2·base, 4·base… capped (SQS allows 12 h)."""
    return int(min(cap, base * (2 ** max(0, attempt - 1))))


Handler = Callable[[MessageBatch], Awaitable[None]]


LONG_POLL_LEFT = 0.75  # seconds of max_batch_timeout left for a 1 s long poll (overshooting by at most 0.25 s)


class Consumer:
    """Pulls batches from one queue and settles them after the handler ran."""

    def __init__(self, queue: SQSQueue, settings: QueueConsumer, *, dead_letter: SQSQueue | None,
                 poll_wait_seconds: int = 1) -> None:
        self.queue = queue
        self.settings = settings
        self.dead_letter = dead_letter
        self.poll_wait_seconds = poll_wait_seconds
        self.batches = 0
        # One first receive at a time per consumer, whatever its max_concurrency: idle batch loops
        # take turns (a receive returns at once while messages wait), so more loops do not mean more
        # long polls. With twelve loops receiving at once, the embedded SQS lost 4 of 5,000 bucket
        # events (moto delivers an S3 event inside the PUT and swallows any error of that delivery).
        self._receiving = asyncio.Lock()

    async def next_batch(self) -> MessageBatch:
        """Up to max_batch_size messages, waiting at most max_batch_timeout once the first arrived."""
        batch = MessageBatch(queue=self.queue.name)
        deadline: float | None = None
        while len(batch.messages) < self.settings.max_batch_size:
            remaining = self.settings.max_batch_size - len(batch.messages)
            # Filling a started batch long-polls too (returning as soon as a message arrives) while
            # at least LONG_POLL_LEFT of the batch's time is left: receives are the costly calls (SQS
            # bills each; the embedded one scans its whole queue for each), so not every 50 ms.
            if deadline is None:  # waiting for a first message: one loop at a time
                wait, turn = self.poll_wait_seconds, self._receiving
            else:  # filling a started batch: never in line behind other loops' long polls
                wait = 1 if deadline - time.monotonic() >= LONG_POLL_LEFT else 0
                turn = contextlib.nullcontext()
            async with turn:
                raw = await self.queue.receive(max_messages=remaining, wait_seconds=wait,
                                               visibility_timeout=self.settings.visibility_timeout)
            for item in raw:
                batch.messages.append(_message(item))
            if batch.messages and deadline is None:
                deadline = time.monotonic() + self.settings.max_batch_timeout
            if deadline is None:
                return batch  # idle: let the caller check for shutdown
            if time.monotonic() >= deadline:
                break
            if not raw and not wait:
                await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        return batch

    async def settle(self, batch: MessageBatch) -> None:
        acked = [m.receipt_handle for m in batch.messages if m.outcome == "ack"]
        if acked:  # one request per ten acknowledged messages, not one each
            await self.queue.delete_batch(acked)
        for message in batch.messages:
            if message.outcome == "ack":
                continue
            elif message.attempts > self.settings.max_retries:
                await self._dead_letter(message)
            else:
                delay = message.retry_delay
                if delay is None:
                    delay = backoff(message.attempts, self.settings.retry_delay)
                try:
                    await self.queue.set_visibility(message.receipt_handle, int(delay))
                except ObjectStoreError as exc:  # its handle went stale (received again elsewhere): the
                    # message comes back anyway; the rest of the batch must still be settled
                    log.warning("queue %s: could not delay message %s: %s", self.queue.name, message.id, exc)

    async def _dead_letter(self, message: Message) -> None:
        if self.dead_letter is not None:
            await self.dead_letter.send(message.body, attributes={
                "error": (message.error or "retries exhausted")[:1000],
                "attempts": str(message.attempts), "source_queue": self.queue.name})
            log.warning("queue %s: message %s moved to %s after %d attempts: %s", self.queue.name, message.id,
                        self.dead_letter.name, message.attempts, message.error)
        else:
            log.error("queue %s: message %s dropped after %d attempts (no dead_letter_queue): %s",
                      self.queue.name, message.id, message.attempts, message.error)
        await self.queue.delete(message.receipt_handle)

    async def _heartbeat(self, batch: MessageBatch) -> None:
        """Keep unsettled messages hidden while the handler works on them. The visibility timeout can
        then be short: when a worker dies, its messages come back within one timeout, not hours."""
        if faults.active().no_visibility_extension:
            return  # a fault point (edgeindex.faults): the timeout lapses under a slow step
        interval = max(1.0, self.settings.visibility_timeout / 3)
        while True:
            await asyncio.sleep(interval)
            unsettled = [m.receipt_handle for m in batch.messages if m.outcome is None]
            if unsettled:
                try:  # ten to a request
                    await self.queue.extend_batch(unsettled, self.settings.visibility_timeout)
                except Exception:  # the next beat, or the redelivery, settles them
                    log.warning("queue %s: could not extend %d message(s)", self.queue.name, len(unsettled))

    async def run_once(self, handler: Handler) -> MessageBatch:
        batch = await self.next_batch()
        if not batch.messages:
            return batch
        heartbeat = asyncio.create_task(self._heartbeat(batch))
        try:
            await handler(batch)
        except Exception as exc:  # the handler's failure retries what it did not settle
            log.exception("queue %s: handler failed", self.queue.name)
            batch.retry_all(error=f"{type(exc).__name__}: {exc}")
        else:
            batch.ack_all()
        finally:
            heartbeat.cancel()
        await self.settle(batch)
        self.batches += 1
        return batch

    async def run(self, handler: Handler, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once(handler)
            except Exception:
                log.exception("queue %s: consumer loop error; retrying in 1s", self.queue.name)
                await asyncio.sleep(1)


def _message(item: dict) -> Message:
    attrs = item.get("Attributes", {})
    try:
        body = json.loads(item["Body"])
    except (json.JSONDecodeError, TypeError):
        body = item["Body"]
    return Message(id=item["MessageId"], body=body, attempts=int(attrs.get("ApproximateReceiveCount", 1)),
                   timestamp=int(attrs.get("SentTimestamp", 0)) / 1000, receipt_handle=item["ReceiptHandle"])
