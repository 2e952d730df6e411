#!/bin/bash
# alternating A/B at 8 agents, 1 process: the chunks' vectors real (tag real_*) or random (tag random_*)
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/s21
for tag in "$@"; do
  .venv/bin/python scripts/load_search.py --chunks 12000 --agents 8 --requests 300 --max-seconds 30 \
    --wrk-seconds 8 --processes 1 --vectors "${tag%%_*}" > /tmp/s21/ab_$tag.txt 2>&1
done
