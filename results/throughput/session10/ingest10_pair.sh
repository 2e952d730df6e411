#!/bin/bash
# one A/B pair inside one hold of the bench lock: $1 = pair name, then the order (main|branch ...), e.g. "p1 main branch"
# main = /work/main (its own .venv, code at its HEAD), branch = /work/wt-ingest10
pair=$1; shift
for who in "$@"; do
  if [ "$who" = main ]; then dir=/work/main; else dir=/work/wt-ingest10; fi
  out=/tmp/ingest10-ab/bench_ingest_1000_session10_${pair}_${who}.txt
  { echo "# $who at $(git -C $dir rev-parse --short HEAD), $(date -u +%H:%M:%S) UTC, load: $(uptime)";
    cd $dir && timeout 900 .venv/bin/python scripts/bench_ingest.py --limit 1000 2>&1 | grep -v "Loading weights\|RuntimeDirWarning\|user_runtime_dir";
    echo "# end $(date -u +%H:%M:%S) UTC, load: $(uptime)"; } > $out
done
