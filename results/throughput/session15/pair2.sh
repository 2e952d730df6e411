cd /work/main
for rt in torch onnx; do
  echo "== $rt $(date -u +%H:%M:%S)"
  EDGEINDEX_VAR_MODEL_RUNTIME=$rt .venv/bin/python scripts/bench_ingest.py > /tmp/s15/bench_ingest_5000_pair2_$rt.txt 2>&1
  tail -1 /tmp/s15/bench_ingest_5000_pair2_$rt.txt
done
echo done
