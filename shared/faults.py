"""Fault points: where a test makes the ingestion workflow crash, fail, stall or meet a poison text.

The product never arms them. A test (or ``scripts/chaos.py``) starts a worker through
``python -m edgeindex.testing.worker`` with a ``Faults`` value, which ``install`` makes the process's
own; every point is a no-op with the default ``Faults()``. A step is named ``<step>`` or
``<step>@<document id>`` (the fault then hits that document only):

- ``exit_after_step``: the process exits at once (``os._exit(137)``, as if killed) right after that
  step's result is checkpointed, when the step really ran in this process (not replayed).
- ``exit_in_step``: the process exits right after that step's body returned, before its result is
  checkpointed: its side effects happened and the step runs again on resumption (idempotency).
- ``fail_step``: every attempt of that step raises a transient ``ConnectionError``, so the step's
  retries, the queue's retries and finally the dead-letter queue are exercised.
- ``slow_step``: that step first waits ``slow_seconds``; with ``no_visibility_extension`` the queue
  binding stops extending a message's visibility, so the message lapses to another consumer while
  this one still works.
- ``poison_text``: a model call whose texts contain this marker raises (a poison document inside a
  shared embedding batch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sys
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Faults:
    exit_after_step: str = ""
    exit_in_step: str = ""
    fail_step: str = ""
    slow_step: str = ""
    slow_seconds: float = 45.0
    poison_text: str = ""
    no_visibility_extension: bool = False

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Faults:
        return cls(**json.loads(text))


_active = Faults()


def install(faults: Faults) -> None:
    """Arm ``faults`` in this process (the test launcher does, before the worker starts)."""
    global _active
    _active = faults


def active() -> Faults:
    return _active


def _armed(value: str, step: str, document_id: str) -> bool:
    if not value:
        return False
    name, _, only = value.partition("@")
    return name == step and (not only or only == document_id)


def _exit(kind: str, step: str, document_id: str) -> None:
    log.warning("fault %s: process exits in/after step %s of document %s", kind, step, document_id)
    logging.shutdown()
    sys.stdout.flush()
    os._exit(137)


def exit_after(step: str, document_id: str, *, executed: bool) -> None:
    if executed and _armed(_active.exit_after_step, step, document_id):
        _exit("exit_after_step", step, document_id)


def exit_in(step: str, document_id: str) -> None:
    if _armed(_active.exit_in_step, step, document_id):
        _exit("exit_in_step", step, document_id)


def fail(step: str, document_id: str) -> None:
    if _armed(_active.fail_step, step, document_id):
        raise ConnectionError(f"injected transient failure in step {step!r} (fault fail_step)")


async def slow(step: str, document_id: str) -> None:
    if _armed(_active.slow_step, step, document_id):
        log.warning("fault slow_step: step %s of document %s waits %.0f s", step, document_id, _active.slow_seconds)
        await asyncio.sleep(_active.slow_seconds)


def poison(texts: list[str]) -> None:
    marker = _active.poison_text
    if marker and any(marker in t for t in texts):
        raise ValueError(f"injected model failure on a text containing {marker!r} (fault poison_text)")
