#!/bin/bash
# One A/B pair of bench_ingest.py --limit 1000, run back to back (call under the bench lock):
#   flock /tmp/edgeindex-bench.lock results/throughput/session14/ingest14/ingest14_pair.sh p1 main branch
# main = a detached worktree of main (/work/wt-ingest14-base) through a package link on PYTHONPATH; branch = this
# worktree. Both with this worktree's venv; each output's second line names the package it loaded.
set -u
pair=$1; shift
out=/work/wt-ingest14/results/throughput/session14/ingest14
py=/work/wt-ingest14/.venv/bin/python
for side in "$@"; do
  f=$out/bench_ingest_1000_${pair}_${side}.txt
  { echo "# $side $(date -u +%H:%M:%S) load: $(uptime)"; } > "$f"
  if [ "$side" = main ]; then
    (cd /work/wt-ingest14-base && PYTHONPATH=/tmp/ingest14-basepkg $py -c "import edgeindex; print('# package', edgeindex.__file__)" >> "$f" &&
     PYTHONPATH=/tmp/ingest14-basepkg timeout 1200 $py scripts/bench_ingest.py --limit 1000 >> "$f" 2>&1)
  else
    (cd /work/wt-ingest14 && $py -c "import edgeindex; print('# package', edgeindex.__file__)" >> "$f" &&
     timeout 1200 $py scripts/bench_ingest.py --limit 1000 >> "$f" 2>&1)
  fi
  echo "# end $(date -u +%H:%M:%S) load: $(uptime)" >> "$f"
done
