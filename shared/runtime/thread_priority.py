"""The embedding model's thread first: everything else of the stack at a lower priority (Linux nice).

Why: in the ingest worker every model call ran slower than the same model alone. Measured in the sixth
session (GET /batcher, full 5,000-passage run, quiet machine): 38.3 ms of wall time per text, of which
5.7 ms waiting for a core, while the model is the pipeline's bottleneck (it is never idle: 128 runs in
flight keep it fed). Whatever else wants a core then — the event loop, boto3's threads, Postgres, moto,
the upload worker — can wait a few milliseconds without slowing ingestion; the model cannot.

So the model's thread keeps its priority and the rest is lowered by ``increment`` (nice), never raised:
no privilege is needed and nothing outside the stack is touched. Nice only ranks threads against others
of the same scheduling group (with ``kernel.sched_autogroup_enabled``, the same session): it decides
who of this stack gets a contended core, not how the stack shares the machine with other sessions.

- ``MODEL_FIRST`` (ingest var; ``EDGEINDEX_VAR_MODEL_FIRST``): the increment for every thread of the
  ingest process but the model's (threads they start later inherit it); 0 turns it off. Default 19: on a
  quiet 2-core machine (sixteenth session, all 5,000 MS MARCO passages) the model's thread waited 5.2 ms per
  text for a core at +5, 3.1 at +10 and 1.1 at +19, and end to end ran at 0.735, 0.797 and 0.864 of the
  model alone, with 0.7-2.4 s of 122-145 s spent waiting for a call to fill. The eighth session saw +19 starve
  the pipeline beside other sessions' load (calls half as full): where the host is shared, try a lower value.
- ``DevStack(model_first=N)`` / ``edgeindex dev --model-first N``: the same for the processes the dev
  stack runs beside it (Postgres, moto's threads in the supervisor, the other workers), a deployment
  choice; in production, run those at a lower priority than the ingest workers, or on other hosts.

Postgres is the exception to "nice ranks the stack's threads": the postmaster and every backend it forks call
``setsid()``, so each is a session, hence an autogroup, of its own, and with ``kernel.sched_autogroup_enabled``
a process's nice only ranks it inside its autogroup. Each backend therefore competed with the model's whole
autogroup as an equal, whatever its nice (thirteenth session: perf sched showed every Postgres process in an
autogroup of its own). ``nice_autogroup`` lowers an autogroup's own nice (``/proc/<pid>/autogroup``; lowering
needs no privilege), and the dev stack applies it to each Postgres process, backends forked later included.

Tried first and dropped: the model's thread pinned to a CPU of its own and the rest to the other
(``sched_setaffinity``). Beside other sessions' load the pinned thread could not move to the free core
and waited longer (results/throughput/README.md, seventh session).
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
