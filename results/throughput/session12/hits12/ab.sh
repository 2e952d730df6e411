#!/usr/bin/env bash
# hits12 A/B: one pair (two load_search runs back to back) per call, in the order given, inside one
# hold of the bench lock. main = da4ee0f from /work/wt-hits12-base, branch = a snapshot worktree of
# the branch (/work/wt-hits12-snap); both through a package folder of symlinks first on PYTHONPATH,
# on the branch's venv. Usage: ab.sh p1 main branch
set -u
pair=$1; shift
out=/work/wt-hits12/results/throughput/session12/hits12
for side in "$@"; do
  if [ "$side" = main ]; then dir=/work/wt-hits12-base; pkg=/tmp/hits12-basepkg; else dir=/work/wt-hits12-snap; pkg=/tmp/hits12-snappkg; fi
  diag=
  if [ "$side" = diag ]; then  # the branch again, with the diagnosis probe (/tmp/hits12-diag/sitecustomize.py)
    mkdir -p /tmp/hits12-diag/$pair; export HITS12_DIAG_DIR=/tmp/hits12-diag/$pair; diag=/tmp/hits12-diag:
  fi
  f=$out/ab_${pair}-${side}.txt
  { date -u +%T; uptime; echo "code: $(git -C $dir rev-parse --short HEAD) via $pkg"; } > $f
  # the search worker's resident memory every 5 s (the exact front's share of it: README)
  (while sleep 5; do ps -eo rss=,args= | grep "[c]onfig $dir/wrangler.toml worker search" | awk '{print "rss_kib", $1}'; done) > $out/rss_${pair}-${side}.txt 2>/dev/null &
  rss=$!
  (cd $dir && PYTHONPATH=$diag$pkg timeout 600 /work/wt-hits12/.venv/bin/python scripts/load_search.py --chunks 12000 --agents 8 \
     --processes 1 --requests 300 --wrk-seconds 8 --max-seconds 20) >> $f 2>&1
  kill $rss 2>/dev/null
  { date -u +%T; uptime; } >> $f
  unset HITS12_DIAG_DIR
done
if [ "$pair" = p1 ] && [ -z "${HITS12_NO_DIAG:-}" ]; then exec "$0" p1diag diag; fi
