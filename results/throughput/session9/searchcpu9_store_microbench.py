import random, time, sys, shutil, cProfile, pstats
sys.path.insert(0, sys.argv[1])
from shared import cache
from shared.bindings.kv import DiskKV
shutil.rmtree("/tmp/searchcpu9/kv", ignore_errors=True)
kv = DiskKV("/tmp/searchcpu9/kv", namespace="cache")
rnd = random.Random(1)
payload = {"results": [{"chunk_id": str(i), "content": "word " * 150, "score": 0.5, "document_id": "d", "neighbours": []} for i in range(10)], "entity_ids": ["e1"]}
def one(i):
    ids = [str(rnd.randrange(12000)) for _ in range(10)]
    cache.store(kv, f"k{i}", payload, chunk_ids=ids, entity_ids=["e1"], sequences=(0,), ttl=3600)
for i in range(3000): one(i)
t = time.perf_counter(); c = time.process_time()
for i in range(3000, 4000): one(i)
print("store ms wall %.3f cpu %.3f" % ((time.perf_counter()-t), (time.process_time()-c)))
import os
if os.environ.get("MB_PROFILE"):
  pr = cProfile.Profile(); pr.enable()
  for i in range(4000, 4500): one(i)
  pr.disable(); pstats.Stats(pr).sort_stats("cumulative").print_stats(15)
