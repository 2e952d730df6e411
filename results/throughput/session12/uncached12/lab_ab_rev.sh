#!/bin/bash
# pg_lab.py cpu, main (da4ee0f) and the branch alternating, in one hold of the lock: backend and driver
# the second round: branch first (WAIT: seconds to wait for the lock at most)
# (this process) CPU per search, one connection, 400 searches x 3 per run
D=/work/wt-uncached12/results/throughput/session12/uncached12
PY=/work/wt-uncached12/.venv/bin/python
flock -w $WAIT /tmp/edgeindex-bench.lock bash -c "
for side in branch main branch main; do
  if [ \$side = main ]; then pp=/tmp/uncached12-basepkg; else pp=/tmp/uncached12-branchpkg; fi
  echo \"== \$side \$(date +%T) \$(uptime)\"
  PYTHONPATH=\$pp $PY $D/pg_lab.py cpu /tmp/uncached12-lab --rounds 400 --repeat 3 2>&1 | grep -v Warning | grep -v user_runtime_dir
done
PYTHONPATH=/tmp/uncached12-branchpkg $PY $D/pg_lab.py stop /tmp/uncached12-lab >/dev/null 2>&1
echo \"end \$(date +%T) \$(uptime)\""
