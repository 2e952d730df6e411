#!/bin/bash
# one A/B pair of load_search: main (eb6326d, from a detached worktree) and this branch, each under the lock,
# both through the same interpreter (/work/main/.venv) with the side's package first on PYTHONPATH
# (/tmp/uncached11/{main,branch}pkg/edgeindex -> that worktree's shared/)
# usage: ab.sh TAG [rev]      rev: branch first
ARGS="--chunks 12000 --agents 1,8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
OUT=/work/wt-uncached11/results/throughput/session11/uncached11
run() { # $1 side
  if [ $1 = main ]; then dir=/work/wt-uncached11-main; pp=/tmp/uncached11/mainpkg; else dir=/work/wt-uncached11; pp=/tmp/uncached11/branchpkg; fi
  (cd $dir && echo "side $1 commit $(git rev-parse --short HEAD) queued $(date +%T)" && PYTHONPATH=$pp flock /tmp/edgeindex-bench.lock sh -c "date +%T; uptime; /work/main/.venv/bin/python /work/wt-uncached11/scripts/load_search.py $ARGS; uptime"; echo "end $(date +%T)") > $OUT/ab_$TAG-$1.txt 2>&1
}
TAG=$1
if [ "$2" = rev ]; then run branch; run main; else run main; run branch; fi
