#!/bin/bash
# One A/B pair of load_search (main's code from the base worktree, then this branch), then the 1-agent
# tail lab on the branch, in one hold of the lock. Usage: ab.sh TAG [ORDER] (ORDER "main branch" default)
set -u
TAG=$1; ORDER=${2:-"main branch"}
W=/work/wt-uncached14; OUT=$W/results/throughput/session14/uncached14
CMD="scripts/load_search.py --chunks 12000 --agents 1,8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
for side in $ORDER; do
  echo "== $side start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ $side = main ]; then
    (cd /work/wt-uncached14-base && PYTHONPATH=/tmp/uncached14-basepkg $W/.venv/bin/python -c "import edgeindex, edgeindex.workers.search as w; print('loaded', edgeindex.__file__, w.__file__)" && \
     PYTHONPATH=/tmp/uncached14-basepkg timeout 900 $W/.venv/bin/python $CMD) > $OUT/ab_${TAG}-main.txt 2>&1
  else
    (cd $W && $W/.venv/bin/python -c "import edgeindex, edgeindex.workers.search as w; print('loaded', edgeindex.__file__, w.__file__)" && timeout 900 $W/.venv/bin/python $CMD) > $OUT/ab_${TAG}-branch.txt 2>&1
  fi
  echo "== $side end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
if [ "${TAIL:-1}" = 1 ]; then
  echo "== tail branch start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $W && timeout 600 $W/.venv/bin/python $OUT/tail_lab.py --requests 300) > $OUT/tail_${TAG}-branch.txt 2>&1
  echo "== tail branch end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
