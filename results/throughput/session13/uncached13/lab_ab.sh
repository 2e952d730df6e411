#!/bin/bash
# pg_lab.py cpu (and explain), main (0346138, detached worktree) and the branch alternating in one hold of the
# lock, on one lab database holding both HNSW indexes (full precision: main's statement walks it; halfvec: the
# branch's). Backend and driver CPU per search, one connection, 400 searches x 3 per run.
D=/work/wt-uncached13/results/throughput/session13/uncached13
PY=${PY:-/work/wt-uncached13/.venv/bin/python}
ORDER=${ORDER:-"main branch main branch"}
flock /tmp/edgeindex-bench.lock bash -c "
for side in $ORDER; do
  if [ \$side = main ]; then pp=/tmp/uncached13-basepkg; else pp=/tmp/uncached13-branchpkg; fi
  echo \"== \$side \$(date -u +%T) \$(uptime)\"
  PYTHONPATH=\$pp $PY -c 'import edgeindex; print(edgeindex.__file__)'
  PYTHONPATH=\$pp $PY $D/pg_lab.py cpu /tmp/uncached13-lab --rounds 400 --repeat 3 2>&1 | grep -v Warning | grep -v user_runtime_dir
done
echo \"end \$(date -u +%T) \$(uptime)\""
