#!/bin/bash
# load_search A/B, back to back in one hold of the lock: ORDER="main branch" (or "branch main").
# main = the detached worktree of main (0346138) with its package first on PYTHONPATH; branch = this worktree.
# Same interpreter (this branch's venv) for both.
D=/work/wt-uncached13/results/throughput/session13/uncached13
PY=/work/wt-uncached13/.venv/bin/python
PAIR=$1; ORDER=${ORDER:-"main branch"}
flock /tmp/edgeindex-bench.lock bash -c "
for side in $ORDER; do
  if [ \$side = main ]; then cd /work/wt-uncached13-base; export PYTHONPATH=/tmp/uncached13-basepkg;
  else cd /work/wt-uncached13-snap; export PYTHONPATH=/tmp/uncached13-branchpkg; fi
  out=$D/ab_${PAIR}-\$side.txt
  { echo \"# \$side start \$(date -u +%T) \$(uptime)\"; $PY -c 'import edgeindex; print(edgeindex.__file__)';
    timeout 1200 $PY scripts/load_search.py --chunks 12000 --agents 1,8 --processes 1 --requests 300 \
      --wrk-seconds 8 --max-seconds 20 2>&1 | grep -v -i warning | grep -v user_runtime_dir;
    echo \"# \$side end \$(date -u +%T) \$(uptime)\"; } > \$out
done"
