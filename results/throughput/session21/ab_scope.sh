#!/bin/bash
# alternating A/B at 8 agents, 1 process, real vectors: the scope settled by entity_stats (after) or counted from documents (before)
cd /work/main
for tag in "$@"; do
  cp /tmp/s21/search_${tag%%_*}.sql shared/sql/search.sql
  .venv/bin/python scripts/load_search.py --chunks 12000 --agents 8 --requests 300 --max-seconds 30 \
    --wrk-seconds 8 --processes 1 > /tmp/s21/scope_$tag.txt 2>&1
done
cp /tmp/s21/search_after.sql shared/sql/search.sql
