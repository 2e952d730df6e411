#!/bin/bash
# The retrieval evals (results/README.md's commands, hybrid and vector modes, no BM25 baseline, one timed
# pass: quality only) on this branch, one fresh stack each, in one hold of the lock.
# SIDE=branch (this worktree) or SIDE=main (the detached worktree of main, its package first on PYTHONPATH).
SIDE=${SIDE:-branch}
D=/work/wt-uncached13/results/throughput/session13/uncached13
PY=/work/wt-uncached13/.venv/bin/python
if [ "$SIDE" = main ]; then cd /work/wt-uncached13-base; export PYTHONPATH=/tmp/uncached13-basepkg; else cd /work/wt-uncached13; fi
flock /tmp/edgeindex-bench.lock bash -c "
for ds in ${DATASETS:-msmarco business-reports}; do
  echo \"== $SIDE \$ds \$(date -u +%T) \$(uptime)\"
  $PY -c 'import edgeindex; print(edgeindex.__file__)'
  timeout 1500 $PY -m edgeindex.cli eval --dataset ../shared/data/\$ds --modes hybrid,vector --no-bm25 --repeat 1 \
      --out /tmp/uncached13-eval-$SIDE-\$ds 2>&1 | grep -v -i warning | grep -v user_runtime_dir | tail -25
done
echo \"end \$(date -u +%T) \$(uptime)\""
