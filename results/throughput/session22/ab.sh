#!/bin/bash
# alternating A/B at 1 and 8 agents, 1 process: search queries on 8-bit weights (tag 8bit_*) or fp32 (fp32_*)
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/s22
for tag in "$@"; do
  EDGEINDEX_QUERY_WEIGHTS="${tag%%_*}" .venv/bin/python scripts/load_search.py --chunks 12000 --agents 1,8 \
    --requests 300 --max-seconds 30 --wrk-seconds 8 --processes 1 > /tmp/s22/ab_$tag.txt 2>&1
done
