#!/bin/bash
# one A/B run: $1 = main|branch, $2 = tag. main from the detached worktree of c5c075e through a package dir of symlinks
ARGS="--chunks 12000 --agents 8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
out=/tmp/hits10/ab/$2-$1.txt
if [ "$1" = main ]; then
  (cd /work/wt-hits10-main && echo "main $(git rev-parse --short HEAD)" && uptime && PYTHONPATH=/tmp/hits10/mainpkg flock /tmp/edgeindex-bench.lock /work/wt-hits10/.venv/bin/python scripts/load_search.py $ARGS; uptime) > $out 2>&1
else
  (cd /work/wt-hits10 && echo "branch $(git rev-parse --short HEAD) via PYTHONPATH=/tmp/hits10/branchpkg" && uptime && PYTHONPATH=/tmp/hits10/branchpkg flock /tmp/edgeindex-bench.lock .venv/bin/python scripts/load_search.py $ARGS; uptime) > $out 2>&1
fi
grep -E "exact/wrk" $out
