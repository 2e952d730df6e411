"""The query embedding in one process, main's graph (one output, cache folder of main's key) against this
branch's (two outputs), alternating request by request, median of 3 passes per request, one thread (as
select). Over tools-bfcl's 1,000 requests:
  plain:  encode([request]) on each graph (search's query path: only the pooled output is fetched);
  select: main's select call encode_request([request, *sentences]) on main's graph against the branch's
          encode_request_spans(..., clauses) + the clause scoring the branch adds (catalogue.score per clause)
          on the branch's graph, for the 377 requests with clauses.
    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/toolsq12/embed_ab.py MAIN_DIR BRANCH_DIR"""
import json, sys, time
from pathlib import Path
import numpy as np
from edgeindex.bindings.ai import local_embedder
from edgeindex.bindings.onnx_query import OnnxQueryEncoder
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans
from edgeindex.selection.scoring import Catalogue
from edgeindex.selection.definitions import parse_tool

e = local_embedder()
main = OnnxQueryEncoder(e._model, Path(sys.argv[1]) / "model.onnx")
branch = OnnxQueryEncoder(e._model, Path(sys.argv[2]) / "model.onnx")
queries = [json.loads(l)["query"] for l in open("../shared/data/tools-bfcl/queries.jsonl")]
defs = [parse_tool(json.loads(l), "t") for l in open("../shared/data/tools-bfcl/tools.jsonl")]
vectors = e.encode_sync([d.embedded_text() for d in defs])
cat = Catalogue([("e", d.name) for d in defs], vectors,
                [tl._fields({"name": d.name, "description": d.description, "parameters": d.parameters,
                             "category": d.category, "tags": list(d.tags)}) for d in defs])


def timed(fn):
    t = time.perf_counter(); fn(); return (time.perf_counter() - t) * 1000


def texts_of(q):
    parts = tl.segments(q)
    return [q, *(parts if len(parts) >= 2 else [])]


def select_branch(q):
    spans = clause_spans(q, tl.CLAUSE_MIN_TERMS)
    _, cv = branch.encode_request_spans(texts_of(q), spans)
    for (a, b), v in zip(spans, cv):
        if v is not None:
            cat.score(q[a:b], v)


for q in queries[:20]:  # warm both
    main.encode([q]); branch.encode([q]); main.encode_request(texts_of(q)); select_branch(q)
with_clauses = [q for q in queries if clause_spans(q, tl.CLAUSE_MIN_TERMS)]
rows = {"plain": ([], []), "select": ([], [])}
for q in queries:
    rows["plain"][0].append(np.median([timed(lambda: main.encode([q])) for _ in range(3)]))
    rows["plain"][1].append(np.median([timed(lambda: branch.encode([q])) for _ in range(3)]))
for q in with_clauses:
    rows["select"][0].append(np.median([timed(lambda: main.encode_request(texts_of(q))) for _ in range(3)]))
    rows["select"][1].append(np.median([timed(lambda: select_branch(q)) for _ in range(3)]))
for name, (a, b) in rows.items():
    a, b = np.array(a), np.array(b)
    print(f"{name:6s} n={len(a)} main p50 {np.percentile(a, 50):.2f} p99 {np.percentile(a, 99):.2f} mean {a.mean():.2f} | "
          f"branch p50 {np.percentile(b, 50):.2f} p99 {np.percentile(b, 99):.2f} mean {b.mean():.2f} ms | "
          f"mean ratio {b.mean() / a.mean():.3f}")
