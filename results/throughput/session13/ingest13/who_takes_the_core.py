"""Who runs while the model thread waits for a core: from `perf script` of a `perf sched record` (sched_switch and
sched_wakeup events on every CPU), the intervals the model thread was runnable but not running (woken, or
preempted still runnable, until switched in), and, for each, which tasks ran on the two CPUs meanwhile.

Usage: perf script -i perf-sched.data -F cpu,time,event,trace | python who_takes_the_core.py <model tid> <threads snapshot>
The snapshot (sched_watch.sh's threads_*.txt) names each tid's process (pid, cmdline, nice, autogroup).
"""
import re
import sys
from collections import defaultdict

model = int(sys.argv[1])
names: dict[int, str] = {}
rows = []
for line in open(sys.argv[2]):
    f = line.split()
    if not f[2].startswith("/autogroup"):
        f.insert(2, "-")
    rows.append(f)
model_ag = next(f[2] for f in rows if int(f[1]) == model)
for f in rows:
    tid, ag, nice = int(f[1]), f[2], f[3]
    cmd = " ".join(f[8:])
    kind = ("postgres" if "postgres" in cmd else "ingest worker" if cmd.endswith("worker ingest")
            else "upload worker" if cmd.endswith("worker upload") else "bench process (moto + client)"
            if "bench_ingest" in cmd else "pip install" if "pip install" in cmd else cmd[:60] or "kernel thread")
    if tid == model:
        kind = "the model thread"
    group = "no autogroup" if ag == "-" else "the model's autogroup" if ag == model_ag else "another autogroup"
    names[tid] = f"{kind} ({nice}, {group})"

SW = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
WK = re.compile(r"comm=(.*?) pid=(\d+) prio=(\d+)")
running: dict[int, tuple[int, str, float]] = {}   # cpu -> (tid, comm, since)
wait_start: float | None = None
overlap: dict[str, float] = defaultdict(float)    # who ran on a CPU while the model waited (s, summed over CPUs)
waited = 0.0
comms: dict[int, str] = {}
first = last = None


def credit(upto: float) -> None:
    """Credit the current occupants of every CPU for the model's wait from wait_start to upto."""
    for cpu, (tid, comm, since) in running.items():
        start = max(since, wait_start)
        if upto > start:
            who = names.get(tid) or ("idle" if tid == 0 else f"other: {comm}")
            if tid == 0:
                who = "idle"
            overlap[who] += upto - start


for line in sys.stdin:
    parts = line.split(None, 3)
    if len(parts) < 4:
        continue
    cpu = int(parts[0].strip("[]"))
    t = float(parts[1].rstrip(":"))
    event, trace = parts[2].rstrip(":"), parts[3]
    first = first if first is not None else t
    last = t
    if event.endswith("sched_switch"):
        m = SW.search(trace)
        if not m:
            continue
        prev, state, nxt = int(m.group(2)), m.group(4), int(m.group(6))
        comms[nxt] = m.group(5)
        if wait_start is not None:
            credit(t)
            wait_start = t
        running[cpu] = (nxt, m.group(5), t)
        if prev == model and state.startswith("R"):  # preempted, still runnable: waits from now
            wait_start = t
        if nxt == model and wait_start is not None:
            waited += 0  # accounted by credit()
            wait_start = None
    elif event.endswith("sched_wakeup") or event.endswith("sched_waking"):
        m = WK.search(trace)
        if m and int(m.group(2)) == model and wait_start is None and not any(r[0] == model for r in running.values()):
            wait_start = t

total = sum(overlap.values())
print(f"window {last - first:.1f} s; model thread {model} waited, summed over the 2 CPUs' occupants: {total:.2f} CPU-s "
      f"(~{total / 2:.2f} s of wait)")
for who, s in sorted(overlap.items(), key=lambda kv: -kv[1]):
    print(f"{s:8.3f} s  {s / total:6.1%}  {who}")
