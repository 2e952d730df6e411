#!/bin/bash
# one A/B pair: main then branch (or reversed with arg "rev"), back to back under the lock.
# branch = the snapshot worktree /work/wt-searchcpu9-snap (a commit of searchcpu9), run on the same venv
[ -f /tmp/searchcpu9/prof.on ] && PROF=/tmp/searchcpu9/prof && mkdir -p $PROF
out=/tmp/searchcpu9/ab; mkdir -p $out; tag=$(date +%H%M%S)
ARGS="--chunks 12000 --agents 8 --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20"
run() { # $1 name, $2 worktree, $3 pkg dir
  (cd $2 && echo "commit $(git rev-parse --short HEAD) loop ${EDGEINDEX_EVENT_LOOP:-asyncio} store_after ${EDGEINDEX_SEARCH_STORE_AFTER:-0}" && uptime && PYTHONPATH=$3 /work/wt-searchcpu9/.venv/bin/python scripts/load_search.py $ARGS ${PROF:+--profile $PROF/$tag-$1}; uptime) > $out/$tag-$1.txt 2>&1; }
m() { run main /work/wt-searchcpu9-main /tmp/searchcpu9/mainpkg; }
b() { run branch /work/wt-searchcpu9-snap /tmp/searchcpu9/snappkg; }
u() { EDGEINDEX_EVENT_LOOP=uvloop run uvloop /work/wt-searchcpu9-snap /tmp/searchcpu9/snappkg; }
if [ "$1" = rev ]; then b; m; else m; b; fi
o() { EDGEINDEX_SEARCH_STORE_AFTER=1 run after /work/wt-searchcpu9-snap /tmp/searchcpu9/snappkg; }
[ -f /tmp/searchcpu9/uvloop.on ] && u
[ -f /tmp/searchcpu9/after.on ] && o
echo $tag
