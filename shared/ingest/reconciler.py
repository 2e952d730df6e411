"""The ingest reconciler: a version whose object-created event never reached a consumer is queued again.

S3 and SQS promise at-least-once delivery, not delivery: a bucket notification can be lost (the embedded
moto dropped some under load) and a queue message with it. Without this, such a version stays ``pending``
for good while the stack runs; only ``edgeindex dev``'s recovery at start-up re-sends events. The
reconciler is a scheduled task of the ingest worker (as a Cloudflare cron trigger would be; pgai's
vectorizer and Cloudflare Workflows sweep the same way): every ``RECONCILE_EVERY_SECONDS`` one ingest
process (a Postgres advisory lock; the others skip that round) looks at up to ``RECONCILE_MAX`` versions
and sends, on the ingest queue and in the shape the bucket sends (``events.object_created``), the event of:
- a ``pending`` version with no run whose object is stored, and was stored ``RECONCILE_AFTER_SECONDS``
  ago or more (the later of the row's ``uploaded_at`` and the object's ``LastModified``);
- a ``processing`` version whose run has not moved for ``RECONCILE_LEASE_SECONDS`` and whose advisory
  lock no session holds (its process died, and its message is gone: dead-lettered while another
  consumer held the run, for instance).

What keeps it from sending events that are only late:
- nothing is sent while the queue has messages waiting (``ApproximateNumberOfMessages``): a version
  behind a backlog is waiting its turn, not lost. A lost event is then re-sent once the backlog drains;
- a version received by this process (waiting for a run slot, or held) is skipped;
- a version re-sent waits ``RECONCILE_AFTER_SECONDS`` × 2^(times re-sent) before the next, and is given
  up (logged) after ``RESEND_LIMIT`` times.

A duplicate costs nothing twice: the consumer finds the run complete (or holds its lock) and acks, and a
run is locked per version (``workflow.WorkflowBinding.create``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from .. import sqlfiles
from ..bindings.bucket import Bucket
from ..bindings.database import Database
from ..bindings.queue import SQSQueue
from .events import object_created

log = logging.getLogger(__name__)
SQL = sqlfiles.load("reconcile.sql")

RESEND_LIMIT = 5        # re-sends of one version before the reconciler gives it up (and says so)
REMEMBERED = 10_000     # versions whose re-sends are remembered (the oldest forgotten first)
RECENT = 100            # re-sent versions listed by stats() (GET /reconciler)


@dataclass(frozen=True)
class ReconcileSettings:
    every: float = 30.0      # RECONCILE_EVERY_SECONDS: between sweeps; 0 turns the reconciler off
    after: float = 60.0      # RECONCILE_AFTER_SECONDS: a pending version's object at least this old
    lease: float = 300.0     # RECONCILE_LEASE_SECONDS: a processing run unmoved this long, its lock free
    per_sweep: int = 200     # RECONCILE_MAX: versions looked at per sweep


@dataclass(frozen=True)
class Candidate:
    entity_id: str
    document_id: str
    version: int
    object_key: str
    status: str
    uploaded_s: float | None   # seconds since the row says the object was stored (None: not known)
    run_idle_s: float | None   # processing: seconds since its run last moved (None: no run row)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.entity_id, self.document_id, self.version)


class Reconciler:
    """``run()`` sweeps every ``settings.every`` seconds; ``sweep()`` is one round (tests call it too).

    ``received(key)`` says whether this process holds a queue message about ``(entity, document, version)``
    (``IngestService.receiving``): such a version is on its way already."""

    def __init__(self, *, db: Database, bucket: Bucket, queue: SQSQueue, settings: ReconcileSettings,
                 received: Callable[[tuple[str, str, int]], bool]) -> None:
        self.db = db
        self.bucket = bucket
        self.queue = queue
        self.settings = settings
        self.received = received
        self._cursor: tuple[str, str] = ("", "")  # sweeps walk the versions in key order, a page each
        self._sent: OrderedDict[tuple[str, str, int], tuple[int, float]] = OrderedDict()  # key → (times, at)
        self.counts = {"sweeps": 0, "skipped_elsewhere": 0, "skipped_backlog": 0, "looked_at": 0,
                       "resent": 0, "given_up": 0, "errors": 0}
        self.recent: deque[dict] = deque(maxlen=RECENT)
        self.last_sweep_at: float | None = None

    async def run(self) -> None:
        """The scheduled task (a background task of the ingest worker's start-up)."""
        if self.settings.every <= 0:
            log.info("reconciler off (RECONCILE_EVERY_SECONDS = 0)")
            return
        while True:
            # First sweep one interval after start-up: resume_unfinished takes the runs a crash left first.
            await asyncio.sleep(self.settings.every)
            try:
                await self.sweep()
            except Exception:
                self.counts["errors"] += 1
                log.warning("reconciler sweep failed; the next one retries", exc_info=True)

    async def sweep(self) -> int:
        """One round; returns how many versions it re-sent (0 when another process holds the sweep)."""
        async with self.db.connection() as conn:
            await conn.set_autocommit(True)  # the lock is the session's, each statement its own
            try:
                cur = await conn.execute(SQL["try_sweep_lock"])
                if not (await cur.fetchone())["locked"]:
                    self.counts["skipped_elsewhere"] += 1
                    return 0
                try:
                    return await self._sweep(conn)
                finally:
                    await conn.execute(SQL["sweep_unlock"])
            finally:
                await conn.set_autocommit(False)  # as the pool hands connections out

    async def _sweep(self, conn) -> int:
        self.counts["sweeps"] += 1
        self.last_sweep_at = time.time()
        if (await self.queue.depth())["visible"]:
            # Messages wait for a consumer: a version behind them is late, not lost (the next round looks).
            self.counts["skipped_backlog"] += 1
            return 0
        s = self.settings
        cur = await conn.execute(SQL["stale_versions"], {
            "after_entity": self._cursor[0], "after_id": self._cursor[1], "after": s.after, "lease": s.lease,
            "limit": s.per_sweep})
        rows = await cur.fetchall()
        # a short page is the end of the walk: the next round starts from the first key again
        self._cursor = (rows[-1]["entity_id"], rows[-1]["document_id"]) if len(rows) >= s.per_sweep else ("", "")
        resent = 0
        for row in rows:
            self.counts["looked_at"] += 1
            candidate = Candidate(row["entity_id"], row["document_id"], row["version"], row["object_key"],
                                  row["status"], row["uploaded_s"], row["run_idle_s"])
            try:
                resent += await self._consider(candidate)
            except Exception:  # one version's HEAD or send failing must not stop the others
                self.counts["errors"] += 1
                log.warning("reconciler: could not check %s/%s v%d", candidate.entity_id, candidate.document_id,
                            candidate.version, exc_info=True)
        return resent

    async def _consider(self, c: Candidate) -> int:
        if self.received(c.key):
            return 0  # this process has its message: waiting for a run slot, or held
        times, at = self._sent.get(c.key, (0, 0.0))
        if times >= RESEND_LIMIT:
            return 0
        if times and time.monotonic() - at < self.settings.after * 2 ** times:
            return 0  # the last re-sent event may still be on its way
        info = await self.bucket.head(c.object_key)
        if info is None:
            return 0  # not stored (a presigned URL not used yet; the upload worker expires those)
        if c.status == "pending":
            ages = [a for a in (c.uploaded_s, _age(info.last_modified)) if a is not None]
            age = min(ages) if ages else 0.0  # since the later of the two: the event is sent after both
            if age < self.settings.after:
                return 0
            why = f"pending {age:.0f} s with no run"
        else:
            why = (f"processing, its run idle {c.run_idle_s:.0f} s and unlocked" if c.run_idle_s is not None
                   else "processing with no run row")
        await self.queue.send(object_created(self.bucket.name, c.object_key, size=info.size, etag=info.etag,
                                             configuration_id="edgeindex-reconciler"))
        times += 1
        self._sent[c.key] = (times, time.monotonic())
        self._sent.move_to_end(c.key)
        while len(self._sent) > REMEMBERED:
            self._sent.popitem(last=False)
        self.counts["resent"] += 1
        self.recent.append({"entity_id": c.entity_id, "document_id": c.document_id, "version": c.version,
                            "reason": why, "times": times, "at": time.time()})
        log.warning("reconciler: re-sent the object-created event of %s/%s v%d (%s; re-send %d)", c.entity_id,
                    c.document_id, c.version, why, times)
        if times >= RESEND_LIMIT:
            self.counts["given_up"] += 1
            log.error("reconciler: %s/%s v%d re-sent %d times and still %s; not re-sent again by this process",
                      c.entity_id, c.document_id, c.version, times, c.status)
        return 1

    def stats(self) -> dict:
        s = self.settings
        return {"enabled": s.every > 0, "every_s": s.every, "after_s": s.after, "lease_s": s.lease,
                "per_sweep": s.per_sweep, **self.counts, "last_sweep_at": self.last_sweep_at,
                "recent": list(self.recent)}


def _age(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (datetime.now(UTC) - moment).total_seconds()
