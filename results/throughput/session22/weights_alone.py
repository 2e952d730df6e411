"""Search queries on the model alone: the fp32 packed graph against the 8-bit one (bindings/query_weights.py,
rows aligned to 4), both on the query batcher's two threads; CPU per query and wall per batch.

  .venv/bin/python results/throughput/session22/weights_alone.py [SIZES, default 1,2,4,8]

Batches are drawn at random from MS MARCO's queries (seeded), 60 per size and arm, in six rounds whose arm order
flips (the VM's speed moves within minutes); medians of the per-round medians."""
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from shared.bindings.ai import LocalEmbedder  # noqa: E402

embedder = LocalEmbedder()
embedder.prepare_queries()
encoder = embedder._queries
assert encoder.queries_8bit is not None, "the 8-bit graph was refused (see the log)"
arms = {"fp32": encoder.packed.encode, "8-bit": encoder.queries_8bit.encode}
texts = [json.loads(line)["text"] for line in open(ROOT.parent / "shared/data/msmarco/queries.jsonl")]
sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "1,2,4,8").split(",")]
rng = random.Random(7)
for size in sizes:
    batches = [rng.sample(texts, size) for _ in range(60)]
    for encode in arms.values():   # warm
        encode(batches[0])
    per_round: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
    for r in range(6):
        order = list(arms) if r % 2 == 0 else list(arms)[::-1]
        for name in order:
            cpu, wall = [], []
            for batch in batches[r * 10:(r + 1) * 10]:
                c, w = time.process_time(), time.perf_counter()
                arms[name](batch)
                cpu.append((time.process_time() - c) * 1000 / size)
                wall.append((time.perf_counter() - w) * 1000)
            per_round[name].append((statistics.median(cpu), statistics.median(wall)))
    cpu = {n: statistics.median(c for c, _ in v) for n, v in per_round.items()}
    wall = {n: statistics.median(w for _, w in v) for n, v in per_round.items()}
    print(f"batch {size}: CPU per query fp32 {cpu['fp32']:.2f} ms, 8-bit {cpu['8-bit']:.2f} ms "
          f"(ratio {cpu['8-bit'] / cpu['fp32']:.2f}); wall per batch fp32 {wall['fp32']:.2f} ms, "
          f"8-bit {wall['8-bit']:.2f} ms (ratio {wall['8-bit'] / wall['fp32']:.2f})", flush=True)
