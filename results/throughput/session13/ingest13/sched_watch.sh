#!/bin/bash
# Who takes the model thread's core: during the ingest phase of a bench_ingest run (its output in $1),
# record the scheduler for $2 seconds (perf sched) and snapshot every thread of the stack (nice, autogroup,
# CPU), into directory $3. Started beside the bench, not under the lock itself (the bench holds it).
out=$1; secs=${2:-20}; dir=$3
mkdir -p "$dir"
until grep -q "2) full ingest" "$out" 2>/dev/null; do sleep 1; done
sleep 15
snap() {
  # every thread of the machine: pid tid autogroup nice cpu-ticks schedstat(run ns, wait ns, slices) cmdline
  for t in /proc/[0-9]*/task/[0-9]*; do
    p=${t#/proc/}; p=${p%%/*}; tid=${t##*/}
    read -r stat 2>/dev/null < $t/stat || continue
    rest=${stat##*) }
    set -- $rest
    echo "$p $tid $(cut -d' ' -f1 /proc/$p/autogroup 2>/dev/null) nice=${17} cpu_ticks=$(( ${12} + ${13} )) $(cat $t/schedstat 2>/dev/null) $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-100)"
  done
}
snap > "$dir/threads_before.txt"
perf sched record -a -o /tmp/ingest13-perf-sched.data -- sleep "$secs" 2> "$dir/perf_record.log"
snap > "$dir/threads_after.txt"
echo done > "$dir/watch_done"
