#!/bin/bash
# usage: pair.sh LIMIT TAG N1 N2 ...  — bench_ingest runs back to back, one per --model-first value
limit=$1; tag=$2; shift 2
cd /work/main
for n in "$@"; do
  echo "=== model-first $n start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  .venv/bin/python scripts/bench_ingest.py --limit $limit --model-first $n > /tmp/s16/ingest_${tag}_mf$n.txt 2>&1
  echo "=== model-first $n end $(date -u +%T)"; tail -1 /tmp/s16/ingest_${tag}_mf$n.txt
done
