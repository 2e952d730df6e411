"""Does a query's vector on the 8-bit packed graph depend on what it is packed with?

  .venv/bin/python results/throughput/session21/nbits_batch_dependence.py /tmp/s20/packed_8b32a4.onnx

(the graph: session20/nbits/nbits.py 8 32 4). Compares each query's vector alone with its vector in packed
batches: the probe texts all together, and 40 random batches of eight MS MARCO queries.
"""
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from shared.bindings import onnx_query  # noqa: E402
from shared.bindings.ai import LocalEmbedder  # noqa: E402
from shared.bindings.packed_query import PackedQueries  # noqa: E402

emb = LocalEmbedder()
emb.prepare_queries()
enc = emb._queries
arms = {"fp32": enc.packed}
quantized = PackedQueries.__new__(PackedQueries)
quantized.path, quantized._tokenize = sys.argv[1], enc._tokenize
quantized._session = onnx_query._session(Path(sys.argv[1]), threads=2)
arms["8-bit"] = quantized
probes = list(onnx_query.PROBES)
texts = [json.loads(line)["text"] for line in open(ROOT.parent / "shared/data/msmarco/queries.jsonl")]
for name, packed in arms.items():
    together = packed.encode(probes)
    probe = max(float(np.abs(packed.encode([t])[0] - together[i]).max()) for i, t in enumerate(probes))
    rng = random.Random(1)
    worst = 0.0
    for _ in range(40):
        batch = rng.sample(texts, 8)
        vectors = packed.encode(batch)
        worst = max(worst, *(float(np.abs(vectors[i] - packed.encode([t])[0]).max()) for i, t in enumerate(batch)))
    print(f"{name:6} largest difference alone vs packed: probes together {probe:.1e}; "
          f"40 batches of eight MS MARCO queries {worst:.1e}")
