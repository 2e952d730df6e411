#!/bin/bash
# one A/B pair of load_search in ONE hold of the lock (both sides back to back): branch then main.
# WAIT: seconds to wait for the lock at most. Same sides and interpreter as ab.sh.
ARGS="--chunks 12000 --agents 1,8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
OUT=/work/wt-uncached12/results/throughput/session12/uncached12
PY=/work/wt-uncached12/.venv/bin/python
TAG=$1
flock -w ${WAIT:-600} /tmp/edgeindex-bench.lock bash -c "
for side in branch main; do
  if [ \$side = main ]; then dir=/work/wt-uncached12-base; pp=/tmp/uncached12-basepkg; else dir=/work/wt-uncached12; pp=/tmp/uncached12-branchpkg; fi
  (cd \$dir && echo \"side \$side\" && date +%T && uptime && PYTHONPATH=\$pp $PY -c 'import edgeindex; print(edgeindex.__file__)' && PYTHONPATH=\$pp $PY scripts/load_search.py $ARGS; uptime; echo \"end \$(date +%T)\") > $OUT/ab_$TAG-\$side.txt 2>&1
done" || echo "no lock in time"
