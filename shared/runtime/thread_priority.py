"""Thread priority of the embedding model against the rest of the stack (Linux nice).

In the ingest worker the model is the bottleneck: a model call waiting for a core slows ingestion by as
much, while the event loop, boto3's threads, Postgres, moto and the other workers can wait a few
milliseconds without slowing it. So the model's thread keeps its priority and everything else is lowered
by ``increment`` (never raised: no privilege needed, nothing outside the stack touched).

- ``MODEL_FIRST`` (ingest var): the increment for the ingest process's other threads; 0 turns it off.
  19 suits a quiet machine; on a host shared with other load a lower value starves the pipeline less.
- ``DevStack(background_nice=N)`` / ``edgeindex dev --background-nice N``: the same for the processes
  the dev stack runs beside it. In production, run those at a lower priority or on other hosts.

Nice ranks threads only within a scheduling group (an autogroup per session with
``kernel.sched_autogroup_enabled``), and every Postgres process is a session of its own (``setsid``),
so for Postgres the autogroup itself is lowered (``nice_autogroup``). CPU pinning is not used: beside
other load a pinned thread cannot move to a free core.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Executor


def supported() -> bool:
    return hasattr(os, "setpriority") and os.path.isdir("/proc/self/task")


def thread_ids(pid: int | str = "self") -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def nice_thread(tid: int, increment: int) -> None:
    """One thread (a Linux thread id) ``increment`` lower, at most to 19; a thread gone is skipped."""
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + increment))
    except (ProcessLookupError, PermissionError):
        pass


def nice_process(pid: int, increment: int, *, skip: set[int] | frozenset[int] = frozenset()) -> None:
    """Every thread of a process but ``skip`` (threads and children it starts later inherit the value)."""
    for tid in thread_ids(pid):
        if tid not in skip:
            nice_thread(tid, increment)


def lower_other_threads(increment: int, model_thread: Executor) -> int | None:
    """Every thread of this process but the model's executor thread ``increment`` lower. Returns the
    model thread's id, or None where it does not apply (``increment`` <= 0, not Linux)."""
    if increment <= 0 or not supported():
        return None
    model_tid = model_thread.submit(threading.get_native_id).result()
    nice_process(os.getpid(), increment, skip={model_tid})
    return model_tid


def autogroup_of(pid: int) -> str | None:
    """The name of ``pid``'s autogroup ("/autogroup-123"), None where there is none (or the process is gone)."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return f.read().split()[0]
    except (OSError, IndexError):
        return None


def nice_autogroup(pid: int, increment: int) -> bool:
    """The autogroup of ``pid`` (its session's, with ``kernel.sched_autogroup_enabled``) ``increment`` lower, at
    most to 19. False where there is none to lower (no autogroups, the process gone, not ours)."""
    path = f"/proc/{pid}/autogroup"
    try:
        with open(path) as f:
            current = int(f.read().split()[-1])  # "/autogroup-123 nice 0"
        with open(path, "w") as f:
            f.write(str(min(19, current + increment)))
    except (OSError, ValueError, IndexError):
        return False
    return True


def postgres_pids(pgdata) -> list[int]:
    """The embedded Postgres's postmaster (``postmaster.pid``) and its children; backends forked later
    inherit the postmaster's priority."""
    try:
        with open(f"{pgdata}/postmaster.pid") as f:
            postmaster = int(f.readline())
    except (OSError, ValueError):
        return []
    pids = [postmaster]
    try:  # the kernel's list of its children: no scan of /proc (the dev stack asks every second)
        with open(f"/proc/{postmaster}/task/{postmaster}/children") as f:
            return pids + [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        pass
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == postmaster:
                pids.append(int(entry))
    return pids
