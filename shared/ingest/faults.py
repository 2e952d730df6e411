"""Test hooks for crash and failure injection in the ingestion workflow. Not for production use.

Both read an environment variable of the ingest worker process, ``<step>`` or
``<step>@<document id>`` (the latter limits the fault to one document):

- ``EDGEINDEX_FAULT_EXIT_AFTER_STEP``: the process exits at once (``os._exit(137)``,
  as if killed) right after that step's result is checkpointed — only when the
  step really ran in this process, not when it was replayed from its checkpoint.
- ``EDGEINDEX_FAULT_EXIT_IN_STEP``: the process exits right after that step's body
  returned, before its result is checkpointed: its side effects happened, the
  engine does not know it, so the step runs again on resumption (idempotency).
- ``EDGEINDEX_FAULT_FAIL_STEP``: every attempt of that step raises a transient
  ``ConnectionError``, so the step's retries, the queue's retries and finally the
  dead-letter queue are exercised.
- ``EDGEINDEX_FAULT_SLOW_STEP``: that step first waits ``EDGEINDEX_FAULT_SLOW_SECONDS``
  (default 45). With ``EDGEINDEX_FAULT_NO_VISIBILITY_EXTENSION=1`` (``bindings.queue``) the
  message's visibility timeout then lapses while the step runs, and the queue hands the
  message to another consumer while this one still works (``scripts/chaos.py``).
- ``EDGEINDEX_FAULT_POISON_TEXT``: a model call whose texts contain this marker raises
  (a poison document inside a shared embedding batch).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

log = logging.getLogger(__name__)

EXIT_AFTER_STEP = "EDGEINDEX_FAULT_EXIT_AFTER_STEP"
EXIT_IN_STEP = "EDGEINDEX_FAULT_EXIT_IN_STEP"
FAIL_STEP = "EDGEINDEX_FAULT_FAIL_STEP"
SLOW_STEP = "EDGEINDEX_FAULT_SLOW_STEP"
SLOW_SECONDS = "EDGEINDEX_FAULT_SLOW_SECONDS"
POISON_TEXT = "EDGEINDEX_FAULT_POISON_TEXT"


def _armed(variable: str, step: str, document_id: str) -> bool:
    value = os.environ.get(variable, "")
    if not value:
        return False
    name, _, only = value.partition("@")
    return name == step and (not only or only == document_id)


def _exit(variable: str, step: str, document_id: str) -> None:
    log.warning("test hook %s: process exits in/after step %s of document %s", variable, step, document_id)
    logging.shutdown()
    sys.stdout.flush()
    os._exit(137)


def exit_after(step: str, document_id: str, *, executed: bool) -> None:
    if executed and _armed(EXIT_AFTER_STEP, step, document_id):
        _exit(EXIT_AFTER_STEP, step, document_id)


def exit_in(step: str, document_id: str) -> None:
    if _armed(EXIT_IN_STEP, step, document_id):
        _exit(EXIT_IN_STEP, step, document_id)


def fail(step: str, document_id: str) -> None:
    if _armed(FAIL_STEP, step, document_id):
        raise ConnectionError(f"injected transient failure in step {step!r} ({FAIL_STEP} test hook)")


async def slow(step: str, document_id: str) -> None:
    if _armed(SLOW_STEP, step, document_id):
        seconds = float(os.environ.get(SLOW_SECONDS) or 45)
        log.warning("test hook %s: step %s of document %s waits %.0f s", SLOW_STEP, step, document_id, seconds)
        await asyncio.sleep(seconds)


def poison(texts: list[str]) -> None:
    marker = os.environ.get(POISON_TEXT, "")
    if marker and any(marker in t for t in texts):
        raise ValueError(f"injected model failure on a text containing {marker!r} ({POISON_TEXT} test hook)")
