#!/bin/bash
# alternating A/B at 8 agents, 1 process: packed (1) vs padded (0)
cd /work/main
for tag in "$@"; do
  v=${tag%%_*}
  EDGEINDEX_PACKED_QUERIES=$v .venv/bin/python scripts/load_search.py --chunks 12000 --agents 8 --requests 300 --max-seconds 30 --wrk-seconds 8 --processes 1 > /tmp/s20/ab_$tag.txt 2>&1
done
