"""A core of its own for the embedding model (Linux CPU affinity).

Why: in the ingest worker every model call ran slower than the same model alone. Measured in the sixth
session (GET /batcher on the full 5,000-passage run): 38.3 ms of wall time per text, of which 30.9 ms was
the model thread's CPU (25.5 ms alone, same single thread) and 5.7 ms waiting for a core. The model's
thread shared its core with the event loop, moto, Postgres and the upload worker, and migrated between
the two cores, losing its caches each time. So the layout here is: the model's thread on one CPU, and
everything else of the stack on the others.

``MODEL_CPU`` (ingest var, ``EDGEINDEX_VAR_MODEL_CPU`` in the environment):
- ``auto``: the model's thread on the last CPU this process may use, when it may use at least two;
- a number: that CPU (when it is one this process may use, and not its only one);
- ``off`` (or empty): no pinning.
It never applies where it cannot: fewer than two CPUs, no ``sched_setaffinity`` (not Linux), or a CPU
outside the process's set (a container's cpuset). Then nothing is pinned and the model runs as before.

The rest of the stack is a deployment choice (``DevStack(model_core=True)``, ``edgeindex dev
--model-core``): Postgres, moto and the other workers are then kept off the model's CPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from concurrent.futures import Executor
from dataclasses import dataclass

log = logging.getLogger(__name__)

OFF = ("", "off", "none", "false", "no")


@dataclass(frozen=True)
class Layout:
    """The model's CPU, and the CPUs left for everything else."""

    model: int
    rest: frozenset[int]

    def describe(self) -> dict:
        return {"model_cpu": self.model, "other_cpus": sorted(self.rest)}


def supported() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def allowed_cpus() -> list[int]:
    """CPUs this process may run on (its affinity mask, which a container's cpuset narrows)."""
    return sorted(os.sched_getaffinity(0)) if supported() else []


def plan(setting: object, cpus: list[int] | None = None) -> Layout | None:
    """The layout ``MODEL_CPU`` asks for on these CPUs, or None where it cannot or should not apply."""
    value = str(setting if setting is not None else "").strip().lower()
    if value in OFF:
        return None
    cpus = allowed_cpus() if cpus is None else sorted(cpus)
    if len(cpus) < 2:
        return None  # one core: nothing to give the model on its own
    if value == "auto":
        model = cpus[-1]
    else:
        try:
            model = int(value)
        except ValueError:
            raise ValueError(f"MODEL_CPU: expected auto, off or a CPU number, got {setting!r}") from None
        if model not in cpus:
            log.warning("MODEL_CPU=%s is not among this process's CPUs %s: not pinning", model, cpus)
            return None
    return Layout(model, frozenset(c for c in cpus if c != model))


def pin_thread(tid: int, cpus: set[int] | frozenset[int]) -> bool:
    """One thread (a Linux thread id; 0: the calling thread) onto these CPUs. False if it is gone."""
    try:
        os.sched_setaffinity(tid, cpus)
        return True
    except (ProcessLookupError, FileNotFoundError):
        return False


def thread_ids(pid: int | str = "self") -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return []


def pin_process(pid: int, cpus: set[int] | frozenset[int]) -> None:
    """Every thread of a process (threads and children it creates later inherit the mask)."""
    for tid in thread_ids(pid):
        pin_thread(tid, cpus)


def pin_model(layout: Layout, model_thread: Executor) -> int:
    """The model's executor thread onto ``layout.model``, every other thread of this process onto
    ``layout.rest`` (threads started later by them inherit it). Returns the model thread's id."""
    model_tid = model_thread.submit(_pin_self, {layout.model}).result()
    for tid in thread_ids():
        if tid != model_tid:
            pin_thread(tid, layout.rest)
    log.info("model thread %d on CPU %d; the process's other threads on %s", model_tid, layout.model,
             sorted(layout.rest))
    return model_tid


def _pin_self(cpus: set[int]) -> int:
    import threading

    os.sched_setaffinity(0, cpus)
    return threading.get_native_id()


@contextlib.contextmanager
def thread_on(cpus: set[int] | frozenset[int] | None) -> Iterator[None]:
    """The calling thread on these CPUs for a while (None: unchanged); its mask is restored after."""
    if not cpus or not supported():
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


class StackLayout:
    """The dev stack's side of the layout (a deployment choice): Postgres, moto (the supervisor's own
    threads) and the workers that are not ingest kept off the model's CPU. Ingest processes start with
    every CPU the supervisor had, so each can pin its own model thread (``MODEL_CPU``).

    It applies only with one ingest process and at least two CPUs: with one model per CPU there is no
    core left for the rest."""

    def __init__(self, setting: object, ingest_processes: int) -> None:
        self.cpus = allowed_cpus()
        self.layout = plan(setting, self.cpus) if ingest_processes == 1 else None

    def __bool__(self) -> bool:
        return self.layout is not None

    def worker_preexec(self, kind: str):
        """Runs in a worker's child before exec: an ingest process gets every CPU back (it pins its
        own threads), any other worker the CPUs left from the model."""
        if self.layout is None:
            return None
        cpus = set(self.cpus) if kind == "ingest" else set(self.layout.rest)
        return lambda: os.sched_setaffinity(0, cpus)

    def keep_off(self, pids: list[int]) -> None:
        """These processes (every thread) onto the CPUs left from the model."""
        if self.layout is not None:
            for pid in pids:
                pin_process(pid, self.layout.rest)


def postgres_pids(pgdata) -> list[int]:
    """The embedded Postgres's postmaster (``postmaster.pid``) and its children (later backends are
    forked from the postmaster and inherit its mask)."""
    try:
        postmaster = int(open(f"{pgdata}/postmaster.pid").readline())
    except (OSError, ValueError):
        return []
    pids = [postmaster]
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


def nice_thread(tid: int, increment: int) -> None:
    """Lower one thread's priority by ``increment`` (nice; never raised: no privilege needed)."""
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + increment))
    except (ProcessLookupError, PermissionError):
        pass


def model_first(increment: int, model_thread: Executor) -> int:
    """Every thread of this process but the model's at nice +``increment`` (threads they start later
    inherit it): the model's thread wins a contended core within this stack. Returns its thread id."""
    import threading

    model_tid = model_thread.submit(threading.get_native_id).result()
    for tid in thread_ids():
        if tid != model_tid:
            nice_thread(tid, increment)
    return model_tid


def nice_process(pid: int, increment: int, *, skip: set[int] = frozenset()) -> None:
    for tid in thread_ids(pid):
        if tid not in skip:
            nice_thread(tid, increment)
