#!/bin/bash
# one A/B pair of load_search: main (da4ee0f, a detached worktree) and this branch, each under the lock,
# through the branch's interpreter with the side's package first on PYTHONPATH
# (/tmp/uncached12-{base,branch}pkg/edgeindex -> that worktree's shared/)
# usage: ab.sh TAG [rev]      rev: branch first
ARGS="--chunks 12000 --agents 1,8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
OUT=/work/wt-uncached12/results/throughput/session12/uncached12
PY=/work/wt-uncached12/.venv/bin/python
run() { # $1 side
  if [ $1 = main ]; then dir=/work/wt-uncached12-base; pp=/tmp/uncached12-basepkg; else dir=/work/wt-uncached12; pp=/tmp/uncached12-branchpkg; fi
  (cd $dir && echo "side $1 commit $(git rev-parse --short HEAD) queued $(date +%T)" && PYTHONPATH=$pp flock /tmp/edgeindex-bench.lock sh -c "date +%T; uptime; $PY -c 'import edgeindex; print(edgeindex.__file__)'; $PY scripts/load_search.py $ARGS; uptime"; echo "end $(date +%T)") > $OUT/ab_$TAG-$1.txt 2>&1
}
TAG=$1
if [ "$2" = rev ]; then run branch; run main; else run main; run branch; fi
