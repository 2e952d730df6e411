#!/bin/bash
# one A/B pair of load_search (main = c5c075e's code, ef_search 100; branch = uncached10), each under the lock
# usage: ab.sh TAG [rev]
ARGS="--chunks 12000 --agents 1,8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
run() { # $1 side
  if [ $1 = main ]; then dir=/work/wt-uncached10-main; py=/work/main/.venv/bin/python; pp=/tmp/uncached10/mainpkg; else dir=/work/wt-uncached10; py=/work/wt-uncached10/.venv/bin/python; pp=; fi
  (cd $dir && echo "side $1 commit $(git rev-parse --short HEAD) start $(date +%T)" && PYTHONPATH=$pp flock /tmp/edgeindex-bench.lock sh -c "uptime; $py scripts/load_search.py $ARGS; uptime"; echo "end $(date +%T)") > /tmp/uncached10/ab_$TAG-$1.txt 2>&1
}
TAG=$1
if [ "$2" = rev ]; then run branch; run main; else run main; run branch; fi
