"""Memory of one exact-front copy (hits12): what a copy holds once it has served a hit -- the payload
as cache.load_entry unpickles it, its JSON (Copy.encoded) and its telemetry columns -- measured with
tracemalloc over N copies of payloads shaped as engine.shape makes them (k = 10, text included, as
load_search asks), from real MS MARCO passages. Also counts the objects the garbage collector tracks
per copy (what a full collection walks)."""
import gc
import json
import pickle
import random
import sys
import tracemalloc
from pathlib import Path

from edgeindex.routing.service import answer_columns
from edgeindex.search.exact_front import ExactFront

DATA = Path(__file__).resolve().parents[5] / "shared" / "data" / "msmarco" / "corpus.jsonl"
texts = [json.loads(line)["text"] for _, line in zip(range(5000), open(DATA, encoding="utf-8"))]
random.seed(1)


def payload(i: int, k: int = 10) -> dict:
    results = []
    for r in range(k):
        results.append({"chunk_id": str(100000 + i * k + r), "document_id": f"doc-{i}-{r}",
                        "entity_id": "load-agents", "position": r, "start_char": 0, "end_char": 400,
                        "score": random.random(), "scores": {"vector": random.random(), "text": random.random(),
                                                             "trigram": random.random()},
                        "document": {"title": f"passage {i}-{r}", "source": f"msmarco/{i}-{r}.txt", "tags": []},
                        **({"text": random.choice(texts)} if TEXT else {})})
    return {"results": results, "entity_ids": ["load-agents"], "corrections": [],
            "routing": {"requested": None, "strategy": "hybrid", "alpha": 0.7 - i * 1e-6, "model_version": None}}


N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
TEXT = "--no-text" not in sys.argv
K = 50 if "--k50" in sys.argv else 10
pickled = [pickle.dumps(payload(i, K), protocol=pickle.HIGHEST_PROTOCOL) for i in range(N)]  # as the KV holds them
front = ExactFront(max_entries=N)
gc.collect()
tracked_before = len(gc.get_objects())
tracemalloc.start()
for i, blob in enumerate(pickled):
    front.put(f"key{i}", (1,), pickle.loads(blob), 1e12)
    copy = front.get_copy(f"key{i}", (1,))
    copy.encoded  # noqa: B018 -- made on the first hit
    copy.telemetry = answer_columns(copy.payload)
current, _ = tracemalloc.get_traced_memory()
tracemalloc.stop()
gc.collect()
tracked = len(gc.get_objects()) - tracked_before
mean_json = sum(len(front.get_copy(f"key{i}", (1,)).encoded) for i in range(N)) / N
print(f"{N} copies: {current / N / 1024:.1f} KiB per copy (JSON {mean_json / 1024:.1f} KiB of it), "
      f"{tracked / N:.1f} gc-tracked objects per copy; pickled entry {sum(map(len, pickled)) / N / 1024:.1f} KiB")
