"""Recall of the HNSW walk, full precision (chunks_p*_embedding_idx) against half precision
(chunks_p*_embedding_half_idx), on pg_lab.py's database (both indexes, 12,000 random unit vectors:
HNSW's hard case) with the 50 MS MARCO queries' real embeddings: the share of the exact top n (by
full-precision distance) each walk returns as its n candidates, at the service's settings (ef_search
40, iterative scan relaxed_order), n = 40 (k 10) and 80 (dedupe). Not a timing.

  lab_recall.py LAB_FOLDER
"""
import sys
from pathlib import Path

import numpy as np
import psycopg

folder = Path(sys.argv[1])
vectors = np.load(folder / "queries.npy")
with psycopg.connect((folder / "dsn").read_text(), autocommit=True) as conn:
    conn.execute("SET hnsw.ef_search = 40")
    conn.execute("SET hnsw.iterative_scan = relaxed_order")
    for n in (40, 80):
        full, half = [], []
        for v in vectors:
            q = "[" + ",".join(map(str, v)) + "]"
            exact = {r[0] for r in conn.execute(
                "SELECT id FROM chunks WHERE entity_id = 'load-agents' ORDER BY (embedding <=> %s::vector) + 0 LIMIT %s",
                (q, n))}
            a = {r[0] for r in conn.execute(
                "SELECT id FROM chunks WHERE entity_id = 'load-agents' ORDER BY embedding <=> %s::vector LIMIT %s",
                (q, n))}
            b = {r[0] for r in conn.execute(
                "SELECT id FROM chunks WHERE entity_id = 'load-agents' "
                "ORDER BY embedding::halfvec(384) <=> %s::vector::halfvec LIMIT %s", (q, n))}
            full.append(len(a & exact) / n)
            half.append(len(b & exact) / n)
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM chunks WHERE entity_id = 'load-agents' "
            "ORDER BY embedding::halfvec(384) <=> %s::vector::halfvec LIMIT 40", (q,)))
        assert "embedding_half_idx" in plan, plan
        print(f"n {n}: recall of the exact top {n}, mean over 50 queries: full-precision HNSW {np.mean(full):.4f} "
              f"(min {min(full):.3f}), halfvec HNSW {np.mean(half):.4f} (min {min(half):.3f})")
