#!/bin/bash
cd /work/main
for lanes in "$@"; do
  echo "=== lanes $lanes start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  EDGEINDEX_QUERY_LANES=$lanes .venv/bin/python scripts/load_search.py --chunks 12000 --agents 8 --requests 300 --max-seconds 30 --wrk-seconds 8 > /tmp/s16/load_lanes$lanes.txt 2>&1
  echo "=== lanes $lanes end $(date -u +%T)"; grep '^{' /tmp/s16/load_lanes$lanes.txt | grep wrk
done
