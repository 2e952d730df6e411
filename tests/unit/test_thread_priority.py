"""The model's thread first (runtime/thread_priority.py): every other thread of the process at a lower priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from edgeindex.runtime import thread_priority

pytestmark = pytest.mark.skipif(not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"),
                                reason="needs Linux per-thread priorities")

# Run in a child: niceness cannot be taken back without privilege, and the test process should keep its own.
CHILD = r"""
import json, os, threading
from concurrent.futures import ThreadPoolExecutor
from edgeindex.runtime import thread_priority

model = ThreadPoolExecutor(1)
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
nice = lambda tid: os.getpriority(os.PRIO_PROCESS, tid)
before = {"main": nice(threading.get_native_id()), "other": nice(other.native_id)}
model_tid = thread_priority.lower_other_threads(5, model)
late = ThreadPoolExecutor(1)  # started after, by the main thread
after = {"model": nice(model_tid), "other": nice(other.native_id), "main": nice(threading.get_native_id()),
         "late": late.submit(lambda: nice(threading.get_native_id())).result(),
         "model_is_executor": model.submit(threading.get_native_id).result() == model_tid}
stop.set(); other.join(); model.shutdown(); late.shutdown()
print(json.dumps({"before": before, "after": after}))
"""


def test_every_thread_but_the_models_is_niced_and_threads_started_later_inherit_it():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    base = result["before"]["main"]
    assert result["after"]["model_is_executor"]
    assert result["after"]["model"] == base
    assert result["after"]["other"] == min(19, base + 5)
    assert result["after"]["main"] == min(19, base + 5)
    assert result["after"]["late"] == min(19, base + 5)


def test_nice_never_goes_past_19():
    # a thread already at 19 stays there (setpriority would refuse anything higher anyway)
    out = subprocess.run([sys.executable, "-c",
                          "import os, threading; from edgeindex.runtime import thread_priority; os.nice(17); "
                          "thread_priority.nice_thread(threading.get_native_id(), 5); print(os.getpriority(os.PRIO_PROCESS, 0))"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert int(out.stdout.split()[-1]) == 19


def test_zero_lowers_nothing():
    from concurrent.futures import ThreadPoolExecutor

    model = ThreadPoolExecutor(1)
    try:
        assert thread_priority.lower_other_threads(0, model) is None
    finally:
        model.shutdown()


DEV_CHILD = r"""
import json, os, subprocess, sys, threading
from edgeindex.runtime.dev import DevStack

stack = object.__new__(DevStack)  # only what _lower_background reads: no services are started
stack.background_nice, stack._postgres = 5, None
stack.processes = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                   for name in ("upload", "ingest", "ingest-2")}
stop = threading.Event()
moto = threading.Thread(target=stop.wait)  # stands for moto's server thread in the supervisor
moto.start()
nice = lambda tid: os.getpriority(os.PRIO_PROCESS, tid)
base = nice(0)
stack._lower_background()
out = {"base": base, "caller": nice(threading.get_native_id()), "moto": nice(moto.native_id),
       **{name: nice(p.pid) for name, p in stack.processes.items()}}
stop.set(); moto.join()
for p in stack.processes.values():
    p.kill(); p.wait()
print(json.dumps(out))
"""


def test_the_dev_stack_lowers_moto_and_the_other_workers_but_not_the_ingest_processes_nor_its_caller():
    out = subprocess.run([sys.executable, "-c", DEV_CHILD], capture_output=True, text=True, check=True, timeout=60)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    lowered = min(19, result["base"] + 5)
    assert result["moto"] == lowered
    assert result["upload"] == lowered
    assert result["ingest"] == result["base"]    # each ingest process lowers its own threads but the model's
    assert result["ingest-2"] == result["base"]
    assert result["caller"] == result["base"]    # the thread that started the stack (the bench's client)


# Stands for the postmaster: a session of its own whose children each start one more (``setsid``), as every
# Postgres backend does. "backend" starts a child in a session of its own; "forked" one still in the
# postmaster's (a backend between its fork and its setsid); "setsid" makes that one a session of its own.
# Each answers with the child's pid.
POSTMASTER = r"""
import subprocess, sys
children, forked = [], None
LATE = "import os, sys; sys.stdin.readline(); os.setsid(); print(os.getpid(), flush=True); sys.stdin.read()"
for line in sys.stdin:
    if line.strip() == "setsid":
        forked.stdin.write(b"\n"); forked.stdin.flush(); forked.stdout.readline()
        print(forked.pid, flush=True)
        continue
    late = line.strip() == "forked"
    children.append(subprocess.Popen([sys.executable, "-c", LATE if late else "import sys; sys.stdin.read()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=not late))
    forked = children[-1] if late else forked
    print(children[-1].pid, flush=True)
for c in children:
    c.stdin.close(); c.wait()
"""


def _autogroup_nice(pid: int) -> int:
    with open(f"/proc/{pid}/autogroup") as f:
        return int(f.read().split()[-1])


def _autogroups_enabled() -> bool:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def _autogroup_nice_if_any(pid: int) -> int | None:
    """None for a process of the root autogroup (one that never started a session of its own, e.g. a CI job's
    shell): the kernel prints nothing for it, and it cannot be lowered."""
    with open(f"/proc/{pid}/autogroup") as f:
        text = f.read().split()
    return int(text[-1]) if text else None


@pytest.mark.skipif(not _autogroups_enabled(), reason="needs autogroup scheduling (kernel.sched_autogroup_enabled)")
def test_the_dev_stack_lowers_the_autogroup_of_every_postgres_process_and_of_backends_forked_later(tmp_path):
    from edgeindex.runtime.dev import DevStack

    postmaster = subprocess.Popen([sys.executable, "-c", POSTMASTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, start_new_session=True)
    try:
        (tmp_path / "pgdata").mkdir()
        (tmp_path / "pgdata" / "postmaster.pid").write_text(f"{postmaster.pid}\n")
        stack = object.__new__(DevStack)  # only what the pass reads: no services are started
        stack.background_nice, stack.state = 5, tmp_path

        def backend(command: str = "backend") -> int:
            postmaster.stdin.write(command + "\n")
            postmaster.stdin.flush()
            return int(postmaster.stdout.readline())

        early = backend()
        base, ours = _autogroup_nice(early), _autogroup_nice_if_any(os.getpid())
        assert _autogroup_nice(postmaster.pid) == base  # each its own session, not yet lowered
        forked = backend("forked")  # not yet a session of its own: in the postmaster's autogroup
        lowered = stack._lower_postgres_autogroups(set())
        assert [_autogroup_nice(p) for p in (postmaster.pid, early, forked)] == [min(19, base + 5)] * 3
        assert len(lowered) == 2  # the postmaster's and the early backend's
        assert backend("setsid") == forked  # now in a new session, at the default nice
        late = backend()  # forked after the first pass
        assert _autogroup_nice(forked) == base and _autogroup_nice(late) == base
        stack._lower_postgres_autogroups(lowered)
        assert [_autogroup_nice(p) for p in (postmaster.pid, early, forked, late)] == [min(19, base + 5)] * 4
        assert _autogroup_nice_if_any(os.getpid()) == ours  # the caller's session untouched
    finally:
        postmaster.stdin.close()
        postmaster.wait(timeout=30)
