#!/usr/bin/env bash
# bench_select pairs: the same code, SELECT_QUERY_GRAPH fp32 (main's behaviour) against int8, alternated
cd /work/main
for side in fp32 int8 int8 fp32; do
  n=$((${n:-0}+1))
  echo "== run $n: $side $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  EDGEINDEX_VAR_SELECT_QUERY_GRAPH=$side .venv/bin/python scripts/bench_select.py --tools ../shared/data/tools-bfcl \
     --per-query /tmp/s15/ab_${n}_${side}.jsonl 2>&1 | grep "select over\|^{"
done
