"""What a query's vector on the 8-bit packed graph depends on: where its rows start in a packed run.

  .venv/bin/python results/throughput/session22/row_offsets.py

The shipped 8-bit graph (bindings/query_weights.py) run without alignment (align = 1): three queries, each
packed first with fillers after it, and after fillers of 3-8 tokens, on one and on two threads; the largest
difference to the query's vector alone."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from shared.bindings import onnx_query  # noqa: E402
from shared.bindings.ai import LocalEmbedder  # noqa: E402
from shared.bindings.packed_query import PackedQueries  # noqa: E402

embedder = LocalEmbedder()
embedder.prepare_queries()
encoder = embedder._queries
assert encoder.queries_8bit is not None, "the 8-bit graph was refused (see the log)"
fillers = ["a", "zebra quantum", "the big dog", "x y z w", "a a a a a", "hello world again and again",
           "1999 olympic games in sydney australia"]
for threads in (1, 2):
    graph = PackedQueries(encoder.queries_8bit.path, encoder._tokenize, align=1)
    graph._session = onnx_query._session(graph.path, threads=threads)
    for text in ("what is the capital of france", "capital of france", "how long is the river nile in km"):
        alone = graph.encode([text])[0]
        first = max(float(np.abs(graph.encode([text, f])[0] - alone).max()) for f in fillers)
        after = {}
        for f in fillers:
            offset = len(encoder._tokenize([f])["input_ids"][0])
            after[offset] = float(np.abs(graph.encode([f, text])[1] - alone).max())
        cells = "  ".join(f"row {o}: {d:.0e}" for o, d in sorted(after.items()))
        print(f"{threads} thread(s), {len(encoder._tokenize([text])['input_ids'][0]):2d} tokens: first with any "
              f"filler after {first:.0e}; starting at {cells}")
