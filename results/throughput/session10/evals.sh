#!/bin/bash
# evals, main (ef_search 100) vs branch (ef_search 40), each under the bench lock
cd /tmp/uncached10
ev() { # $1 side $2 dataset
  if [ $1 = main ]; then dir=/work/wt-uncached10-main; py=/work/main/.venv/bin/edgeindex; pp=/tmp/uncached10/mainpkg; else dir=/work/wt-uncached10; py=/work/wt-uncached10/.venv/bin/edgeindex; pp=; fi
  (cd $dir && echo "== $1 $2 $(date +%T) $(uptime)" && PYTHONPATH=$pp flock /tmp/edgeindex-bench.lock nice -n 5 $py eval --dataset ../shared/data/$2 --modes hybrid,vector --no-bm25 --repeat 1 --out /tmp/uncached10/eval_$1_$2; echo "== end $(date +%T) $(uptime)") > /tmp/uncached10/eval_$1_$2.txt 2>&1
}
ev main business-reports; ev branch business-reports; ev branch msmarco; ev main msmarco
