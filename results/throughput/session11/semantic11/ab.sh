#!/bin/bash
# One A/B side: $1 = main|branch, $2 = tag. Both sides through a package folder of symlinks on PYTHONPATH
# (main: the detached worktree of eb6326d; branch: this worktree), on this branch's venv, under the bench lock.
ARGS="--chunks 12000 --agents 8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
out=/tmp/semantic11/out/ab_$2-$1.txt
if [ "$1" = main ]; then dir=/work/wt-semantic11-main; else dir=/work/wt-semantic11; fi
(cd $dir && echo "$1 $(git rev-parse --short HEAD)" && uptime && PYTHONPATH=/tmp/semantic11/${1}pkg flock /tmp/edgeindex-bench.lock timeout 1200 /work/wt-semantic11/.venv/bin/python scripts/load_search.py $ARGS; uptime) > $out 2>&1
grep -E "semantic/wrk|uncached/wrk|CPU ms" $out
