#!/bin/bash
# one A/B pair inside one hold of the bench lock: $1 = pair name, then the order (main|branch ...), e.g. "p1 main branch"
# main = the detached worktree /work/wt-ingest12-base at main's HEAD, run with the branch's venv and main's code
# (PYTHONPATH to a package link to its shared/); branch = /work/wt-ingest12 (its own venv, editable install)
pair=$1; shift
out_dir=/work/wt-ingest12/results/throughput/session12/ingest12
for who in "$@"; do
  out=$out_dir/bench_ingest_1000_${pair}_${who}.txt
  if [ "$who" = main ]; then dir=/work/wt-ingest12-base; env="PYTHONPATH=/tmp/ingest12-basepkg"; else dir=/work/wt-ingest12; env=""; fi
  { echo "# $who at $(git -C $dir rev-parse --short HEAD), $(date -u +%H:%M:%S) UTC, load: $(uptime)"; (cd $dir && env $env /work/wt-ingest12/.venv/bin/python -c "import edgeindex.runtime.dev as d; print(\"# code:\", d.__file__)");
    cd $dir && env $env timeout 900 /work/wt-ingest12/.venv/bin/python scripts/bench_ingest.py --limit 1000 2>&1 | grep -v "Loading weights\|RuntimeDirWarning\|user_runtime_dir";
    echo "# end $(date -u +%H:%M:%S) UTC, load: $(uptime)"; } > $out
done
