#!/bin/sh
# bench_select.py over all 1,000 tools-bfcl requests (the eval's), main (detached base worktree through a package
# symlink on PYTHONPATH) and this branch alternating, each run under the bench lock.
#   sh results/selection/selectlat13/ab_bench.sh PAIRS
OUT=/work/wt-selectlat13/results/selection/selectlat13
for pair in $(seq 1 "${1:-2}"); do
  for side in main branch; do
    if [ $side = main ]; then dir=/work/wt-selectlat13-base; pp=/tmp/selectlat13-basepkg; else dir=/work/wt-selectlat13; pp=; fi
    cd $dir
    echo "== $side $pair start $(date -u +%H:%M:%S) $(uptime)" > $OUT/bench_ab$pair-$side.txt
    PYTHONPATH=$pp flock /tmp/edgeindex-bench.lock timeout 1200 /work/wt-selectlat13/.venv/bin/python scripts/bench_select.py \
      --tools /work/shared/data/tools-bfcl --queries 1000 --no-raw --per-query /tmp/selectlat13-ab$pair-$side.jsonl \
      2>&1 | grep -v "Loading weights\|RuntimeDirWarning\|return Path" >> $OUT/bench_ab$pair-$side.txt
    echo "== end $(date -u +%H:%M:%S) $(uptime)" >> $OUT/bench_ab$pair-$side.txt
  done
done
