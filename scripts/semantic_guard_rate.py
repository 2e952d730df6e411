"""Semantic-cache hit rate on true paraphrases, with and without the question guard.

For every query of a BEIR folder's queries.jsonl, its nearest other query (cosine, the configured
local model) is taken as the cached one; a hit without the guard is cosine >= the threshold, a hit
with it also needs equal signatures (numbers, identifiers, quoted phrases, words the model does not
know: shared/search/semantic_guard.py). Pairs of different questions are made by changing a number
or identifier in each query that has one, to show what the guard refuses.

  .venv/bin/python scripts/semantic_guard_rate.py ../shared/data/business-reports --threshold 0.95

Reworded paraphrases ("... please", "tell me: ...", "so, ...") measure the hit rate on true paraphrases.

Ends with one JSON line: {"pairs", "hits_without_guard", "hits_with_guard", "reworded_*", "changed_number_pairs",
"changed_number_hits_without_guard", "changed_number_hits_with_guard"}.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from edgeindex.bindings.ai import local_embedder
from edgeindex.search.request import normalize_query
from edgeindex.search.semantic_guard import model_vocabulary, signature


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--threshold", type=float, default=0.95)
    args = parser.parse_args()
    queries = [normalize_query(json.loads(line)["text"])
               for line in (args.dataset / "queries.jsonl").read_text().splitlines() if line.strip()]
    embedder = local_embedder()
    vocabulary = model_vocabulary(embedder)
    vectors = embedder.encode_sync(queries)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1)
    nearest = similarity.argmax(axis=1)
    without = with_guard = 0
    for i, j in enumerate(nearest):
        if similarity[i, j] >= args.threshold:
            without += 1
            with_guard += signature(queries[i], vocabulary) == signature(queries[j], vocabulary)
    # true paraphrases made by rewording around the question (what agents repeat in loops)
    reworded = [normalize_query(v) for q in queries for v in (f"{q} please", f"tell me: {q}", f"so, {q}")]
    reworded_vectors = embedder.encode_sync(reworded)
    originals = np.repeat(vectors, 3, axis=0)
    rcos = (originals * reworded_vectors).sum(axis=1)
    reworded_without = int((rcos >= args.threshold).sum())
    reworded_with = sum(1 for q, r, c in zip(np.repeat(queries, 3), reworded, rcos)
                        if c >= args.threshold and signature(str(q), vocabulary) == signature(r, vocabulary))
    # different questions: the same query with one number changed (or one added)
    changed = [re.sub(r"\d+", lambda m: str(int(m.group()) + 1), q, count=1) if re.search(r"\d", q)
               else f"{q} 2024" for q in queries]
    changed_vectors = embedder.encode_sync(changed)
    cos = (vectors * changed_vectors).sum(axis=1)
    changed_without = int((cos >= args.threshold).sum())
    changed_with = sum(1 for q, c, s in zip(queries, changed, cos)
                       if s >= args.threshold and signature(q, vocabulary) == signature(c, vocabulary))
    result = {"pairs": len(queries), "hits_without_guard": without, "hits_with_guard": with_guard,
              "reworded_pairs": len(reworded), "reworded_hits_without_guard": reworded_without,
              "reworded_hits_with_guard": reworded_with,
              "changed_number_pairs": len(queries), "changed_number_hits_without_guard": changed_without,
              "changed_number_hits_with_guard": changed_with}
    print(f"nearest-query pairs at cosine >= {args.threshold}: {without} of {len(queries)} without the guard, "
          f"{with_guard} with it; reworded paraphrases: {reworded_without} of {len(reworded)} hit without the "
          f"guard, {reworded_with} with it; different questions (a number changed): {changed_without} would hit without "
          f"the guard, {changed_with} with it")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
