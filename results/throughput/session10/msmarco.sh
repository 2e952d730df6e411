#!/bin/bash
# msmarco eval, ingested once: a dev stack (branch code, ef_search 40) evaluates it, then the same state
# under main's code (ef_search 100) evaluates the same entity. The whole script holds the bench lock.
exec 9>/tmp/edgeindex-bench.lock; flock 9
S=/tmp/uncached10/evalstate; mkdir -p $S
export EDGEINDEX_STATE_DIR=$S EDGEINDEX_ADMIN_KEY=uncached10-admin EDGEINDEX_UPLOAD_PORT=18787 EDGEINDEX_INGEST_PORT=18788 EDGEINDEX_SEARCH_PORT=18789
URLS="--upload-url http://127.0.0.1:18787 --search-url http://127.0.0.1:18789 --admin-key uncached10-admin"
up() { # $1 side
  if [ $1 = main ]; then cd /work/wt-uncached10-main; export PYTHONPATH=/tmp/uncached10/mainpkg; E=/work/main/.venv/bin/edgeindex; else cd /work/wt-uncached10; unset PYTHONPATH; E=/work/wt-uncached10/.venv/bin/edgeindex; fi
  $E dev 9>&- > /tmp/uncached10/dev_$1.log 2>&1 & DEV=$!
  for i in $(seq 150); do curl -sf http://127.0.0.1:18789/health >/dev/null && curl -sf http://127.0.0.1:18787/health >/dev/null && break; sleep 2; done
  echo "dev $1 up $(date +%T)"
}
down() { kill -INT $DEV; wait $DEV; echo "dev down $(date +%T)"; }
echo "== branch $(date +%T) $(uptime)"
up branch
nice -n 5 $E eval --dataset ../shared/data/msmarco --modes hybrid,vector --no-bm25 --repeat 1 $URLS --out /tmp/uncached10/eval_branch_msmarco --ingest-timeout 1800 9>&-
down
ENT=$(python3 -c "import json;print(json.load(open('/tmp/uncached10/eval_branch_msmarco/results.json'))['entity_id'])")
echo "== main $(date +%T) $(uptime) entity $ENT"
up main
nice -n 5 $E eval --dataset ../shared/data/msmarco --modes hybrid,vector --no-bm25 --repeat 1 $URLS --entity $ENT --out /tmp/uncached10/eval_main_msmarco 9>&-
down
echo "== end $(date +%T) $(uptime)"
