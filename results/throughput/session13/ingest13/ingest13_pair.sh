#!/bin/bash
# One A/B pair of `scripts/bench_ingest.py --limit 1000`, run under the bench lock by the caller:
#   flock /tmp/edgeindex-bench.lock results/throughput/session13/ingest13/ingest13_pair.sh <pair> <main|branch> <main|branch>
# Both sides use the branch's venv; main is the detached worktree /work/wt-ingest13-base, loaded through a package
# link on PYTHONPATH (the second line of each output names the edgeindex it loaded). SCHED=1: perf sched during
# each side's ingest phase (sched_watch.sh).
pair=$1; shift
V=/work/wt-ingest13/.venv/bin/python
D=/work/wt-ingest13/results/throughput/session13/ingest13
for side in "$@"; do
  out=$D/bench_ingest_1000_${pair}_${side}.txt
  if [ -n "$SCHED" ]; then  # perf sched for 20 s of the ingest phase, on both sides alike
    $D/sched_watch.sh $out 20 $D/sched_${pair}_${side} > /dev/null 2>&1 &
  fi
  if [ "$side" = main ]; then dir=/work/wt-ingest13-base; pp=/tmp/ingest13-basepkg; else dir=/work/wt-ingest13; pp=; fi
  {
    echo "# $side $(git -C $dir rev-parse --short HEAD), start $(date -u +%H:%M:%S) UTC, load: $(uptime)"
    (cd $dir && PYTHONPATH=$pp $V -c "import edgeindex.workflow as w; print('# loads', w.__file__)")
    (cd $dir && PYTHONPATH=$pp timeout 900 $V scripts/bench_ingest.py --limit 1000)
    echo "# end $(date -u +%H:%M:%S) UTC, load: $(uptime)"
  } > $out 2>&1
  if [ -n "$SCHED" ]; then
    wait
    mv /tmp/ingest13-perf-sched.data /tmp/ingest13-perf-sched-${pair}_${side}.data
  fi
done
