"""Query batches on the model alone: padded to their longest query against packed into one token row
(shared/bindings/packed_query.py), on one and two intra-op threads; CPU per query and wall per batch.

  .venv/bin/python results/throughput/session20/packed_alone.py [SIZES, default 1,2,4,8] [--rows-only]

Batches are drawn at random from load_search's 50 MS MARCO queries (seeded), 40 per size, three rounds."""
import json
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from shared.bindings import onnx_query  # noqa: E402
from shared.bindings.ai import LocalEmbedder  # noqa: E402
from shared.bindings.packed_query import PackedQueries  # noqa: E402

embedder = LocalEmbedder()
embedder.prepare_queries()
encoder = embedder._queries
assert encoder.packed is not None, "the packed graph was refused (see the log)"
packed_two = encoder.packed
packed_one = PackedQueries(packed_two.path, encoder._tokenize)
packed_one._session = onnx_query._session(packed_two.path, threads=1)
texts = [json.loads(line)["text"] for line in open(ROOT.parent / "shared/data/msmarco/queries.jsonl")]
arms = {"padded 1 thread": lambda b: encoder.encode(b),
        "packed 1 thread": packed_one.encode,
        "padded 2 threads": lambda b: encoder.encode(b, session=encoder.wide_session()),
        "packed 2 threads": packed_two.encode}


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


sizes = next((a for a in sys.argv[1:] if not a.startswith("--")), "1,2,4,8")
for size in [int(s) for s in sizes.split(",")]:
    random.seed(size)
    batches = [random.sample(texts, size) for _ in range(40)]
    lengths = [[len(row) for row in encoder._tokenize(batch)["input_ids"]] for batch in batches]
    print(f"batch {size}  token rows per batch: padded {np.mean([len(b) * max(b) for b in lengths]):.1f}, "
          f"real {np.mean([sum(b) for b in lengths]):.1f}", flush=True)
    if "--rows-only" in sys.argv:
        continue
    rows = {name: [] for name in arms}
    for _ in range(3):
        for name, encode in arms.items():
            c0, w0 = cpu(), time.perf_counter()
            for batch in batches:
                encode(batch)
            rows[name].append(((cpu() - c0) / (40 * size) * 1000, (time.perf_counter() - w0) / 40 * 1000))
    for name, measured in rows.items():
        print(f"batch {size}  {name:17} CPU per query {np.median([m[0] for m in measured]):5.2f} ms  "
              f"wall per batch {np.median([m[1] for m in measured]):6.2f} ms", flush=True)
