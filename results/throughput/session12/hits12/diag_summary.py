"""Summarise the diagnosis probe's records (hits12; the probe: diag_sitecustomize.py) over one window of
wall-clock time, normally the wrk exact phase: per half second the loop's callbacks, the main thread's
time on a core and waiting for one (schedstat); the GC's collections; the loop steps longer than the
probe's threshold, split into those that ran on the CPU (own work) and those that mostly waited
(preempted: wall >= 2x the thread's CPU).

  diag_summary.py DIAG.jsonl [--window START END]   (epoch seconds; default: the busiest 8 s of callbacks)"""
import collections
import json
import sys

path = sys.argv[1]
events = sorted((json.loads(line) for line in open(path)), key=lambda e: e[1])
sched = [e for e in events if e[0] == "sched"]
if "--window" in sys.argv:
    i = sys.argv.index("--window")
    t0, t1 = float(sys.argv[i + 1]), float(sys.argv[i + 2])
else:  # the 8 s with the most loop callbacks: the exact phase (thousands of hits a second)
    best = max(range(len(sched)), key=lambda i: sum(e[4] for e in sched[i:i + 16]))
    t0, t1 = sched[best][1] - 0.5, sched[min(best + 15, len(sched) - 1)][1]
window = [e for e in events if t0 <= e[1] <= t1]
span = t1 - t0
print(f"window {t0:.1f}-{t1:.1f} ({span:.1f} s)")
run = sum(e[2] for e in window if e[0] == "sched") / 1000
wait = sum(e[3] for e in window if e[0] == "sched") / 1000
calls = sum(e[4] for e in window if e[0] == "sched")
print(f"main thread: on a core {run / span:.0f} ms/s, runnable but waiting for a core {wait / span:.1f} ms/s; "
      f"{calls / span:.0f} loop callbacks/s")
gcs = collections.defaultdict(list)
for e in window:
    if e[0] == "gc":
        gcs[e[2]].append((e[3], e[4]))
for gen, xs in sorted(gcs.items()):
    walls = sorted(x[0] for x in xs)
    print(f"GC gen {gen}: {len(xs)} ({len(xs) / span:.1f}/s), wall p50 {walls[len(walls) // 2]} max {walls[-1]} us, "
          f"total {sum(walls) / 1000:.1f} ms")
slow = collections.defaultdict(lambda: {"own": [], "preempted": []})
for e in window:
    if e[0] == "slow":
        kind = "preempted" if e[3] >= 2 * max(e[4], 1) else "own"
        slow[e[2]][kind].append((e[3], e[4]))
print("loop steps over the threshold (wall us; own: mostly on the CPU, preempted: wall >= 2x CPU):")
for name, kinds in sorted(slow.items(), key=lambda kv: -sum(w for k in kv[1].values() for w, _ in k)):
    parts = []
    for kind in ("own", "preempted"):
        xs = sorted(kinds[kind])
        if xs:
            parts.append(f"{kind} {len(xs)} (p50 {xs[len(xs) // 2][0]}, max {xs[-1][0]}, CPU p50 "
                         f"{sorted(c for _, c in xs)[len(xs) // 2]})")
    print(f"  {name}: {'; '.join(parts)}")
