"""The query graph's pooled vectors, written for comparison between two checkouts (main's graph, one
output; this branch's, two outputs): `encode` of every tools-bfcl request and `encode_request` of each
request with its sentences, as select calls it.
    PYTHONPATH=<pkg> python results/selection/toolsq12/same_vectors.py OUT.npz"""
import json, sys
import numpy as np
import edgeindex
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection import tools as tl

print(edgeindex.__file__, file=sys.stderr)
queries = [json.loads(l)["query"] for l in open("../shared/data/tools-bfcl/queries.jsonl")]
e = local_embedder(); e.prepare_queries()
single = np.stack([e._queries.encode([q])[0] for q in queries])
request = []
for q in queries:
    parts = tl.segments(q)
    request.append(e._queries.encode_request([q, *(parts if len(parts) >= 2 else [])]))
np.savez(sys.argv[1], single=single, request=np.vstack(request))
