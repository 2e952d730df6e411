#!/bin/sh
# bench_select A/B, alternating main (detached base worktree, package symlink on PYTHONPATH) and this branch,
# each run under the bench lock; uptime before and after each run.
OUT=/work/wt-toolsq12/results/selection/toolsq12
PY=/work/wt-toolsq12/.venv/bin/python
for pair in 1 2; do
  for side in main branch; do
    if [ $side = main ]; then DIR=/work/wt-toolsq12-base; PP=/tmp/toolsq12-basepkg; else DIR=/work/wt-toolsq12; PP=; fi
    F=$OUT/bench_select_ab${pair}-$side.txt
    flock /tmp/edgeindex-bench.lock sh -c "cd $DIR && { date -u; uptime; } > $F && PYTHONPATH=$PP timeout 900 $PY scripts/bench_select.py --tools ../shared/data/tools-bfcl >> $F 2>&1; { date -u; uptime; } >> $F"
  done
done
