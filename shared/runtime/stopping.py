"""One deadline for a worker's whole stop.

On SIGTERM a worker finishes what it holds: its queue consumers' batches in hand, its ``wait_until``
work, its HTTP server. Each of these waits on its dependencies, and a dependency that is gone (Postgres
killed under the worker, an endpoint that accepts and never answers) can hold each wait for as long as
its own timeouts allow: 30 s per consumer loop in turn, then the ``wait_until`` work without a bound, then
the threads of blocking calls still inside their retries when the interpreter exits. A worker could
ignore SIGTERM for minutes. Here the stop gets one deadline, ``EDGEINDEX_STOP_SECONDS`` (default 30):
- everything is awaited together, against what is left of the deadline;
- at the deadline what is still running is cancelled and named in the log (a queue message left unsettled
  comes back after its visibility timeout, and its run resumes from its checkpoints);
- a watchdog thread, started with the stop, ends the process ``WATCHDOG_GRACE`` seconds after the
  deadline whatever still holds it (a thread blocked in a call Python cannot interrupt), and names those
  threads first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Iterable

from ..errors import ConfigError

log = logging.getLogger(__name__)

VARIABLE = "EDGEINDEX_STOP_SECONDS"
DEFAULT_SECONDS = 30.0   # below `edgeindex dev`'s 40 s before it kills a worker
WATCHDOG_GRACE = 2.0     # after the deadline, for the process's own exit (closing pools, flushing logs)
EXIT_CODE = 70           # the watchdog's: the process did not stop by itself (EX_SOFTWARE)


def stop_seconds(environ: dict[str, str] | None = None) -> float:
    """The deadline of a worker's stop, from ``EDGEINDEX_STOP_SECONDS``."""
    raw = (os.environ if environ is None else environ).get(VARIABLE, "")
    if not raw.strip():
        return DEFAULT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigError(f"expected a number of seconds, got {raw!r}", key=VARIABLE) from None
    if seconds <= 0:
        raise ConfigError(f"expected a number of seconds above 0, got {raw!r}", key=VARIABLE)
    return seconds


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())


def describe(task: asyncio.Future) -> str:
    """A task as the log names it: its name, and the coroutine it runs when the name says nothing."""
    name = task.get_name() if isinstance(task, asyncio.Task) else repr(task)
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    what = getattr(coro, "__qualname__", None)
    return f"{name} ({what})" if what and not name.startswith(what.split(".")[0]) else name


async def wait_all(tasks: Iterable[asyncio.Future], deadline: Deadline) -> list[asyncio.Future]:
    """Wait for ``tasks`` together until the deadline; returns those still running (not cancelled)."""
    pending = [t for t in tasks if not t.done()]
    if pending and deadline.left() > 0:
        _, still = await asyncio.wait(pending, timeout=deadline.left())
        pending = [t for t in pending if t in still]
    return pending


async def abandon(tasks: list[asyncio.Future], *, settle: float = 1.0) -> None:
    """Cancel ``tasks`` and give them ``settle`` seconds to unwind (a task that swallows its cancellation,
    or waits on a thread, is left behind: the watchdog ends the process)."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=settle)


async def bounded(awaitable: Awaitable, deadline: Deadline, what: str, abandoned: list[str]) -> None:
    """``awaitable`` within what is left of the deadline (at least a moment: cleaning up costs little when
    nothing hangs); past it, named in ``abandoned``."""
    try:
        await asyncio.wait_for(awaitable, timeout=max(deadline.left(), 0.5))
    except TimeoutError:
        abandoned.append(what)
    except Exception:
        log.warning("stopping: %s failed", what, exc_info=True)


def start_watchdog(deadline: Deadline, worker: str) -> threading.Timer:
    """A daemon timer that ends the process ``WATCHDOG_GRACE`` seconds after the deadline (it never fires
    when the process ends first)."""
    def fire() -> None:
        busy = sorted(t.name for t in threading.enumerate()
                      if t is not threading.current_thread() and t.is_alive() and not t.daemon
                      and t is not threading.main_thread())
        log.error("worker %s: still not stopped %.0f s after its stop deadline (%.0f s, %s); exiting now, "
                  "abandoning %s", worker, WATCHDOG_GRACE, deadline.seconds, VARIABLE,
                  ", ".join(busy) or "the main thread's work")
        for handler in logging.getLogger().handlers:
            try:
                handler.flush()
            except Exception:
                pass
        sys.stderr.flush()
        os._exit(EXIT_CODE)

    timer = threading.Timer(deadline.left() + WATCHDOG_GRACE, fire)
    timer.daemon = True
    timer.name = "stop-watchdog"
    timer.start()
    return timer
