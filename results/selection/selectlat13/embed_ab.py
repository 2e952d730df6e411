"""Select's embedding call in one process, main's OnnxQueryEncoder (loaded from the base worktree's module file)
against this branch's, on the same exported graph, alternating request by request (order flipped every other
request), median of PASSES per request. The requests of tools-bfcl whose call is WIDE_MIN_ROWS padded rows or more
(the only ones whose path changed): encode_request_spans([request, *sentences], clauses), as select calls it.
    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/selectlat13/embed_ab.py BASE_WORKTREE [PASSES]"""
import importlib.util, json, os, sys, time
from pathlib import Path
import numpy as np
import edgeindex.bindings
from edgeindex.bindings import onnx_query as branch_mod
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection import tools as tl
from edgeindex.selection.clauses import clause_spans

spec = importlib.util.spec_from_file_location("edgeindex.bindings.onnx_query_main",
                                              Path(sys.argv[1]) / "shared/bindings/onnx_query.py")
main_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main_mod)
assert not hasattr(main_mod, "halves") and hasattr(branch_mod, "halves")
passes = int(sys.argv[2]) if len(sys.argv) > 2 else 2
e = local_embedder()
e.prepare_queries()
path = e._queries.path
main = main_mod.OnnxQueryEncoder(e._model, path); main.wide_session()
branch = branch_mod.OnnxQueryEncoder(e._model, path); branch.wide_session(); branch.second_session()
queries = [json.loads(l)["query"] for l in open("/work/shared/data/tools-bfcl/queries.jsonl")]
tok = e._model.tokenizer


def call_of(q):
    parts = tl.segments(q)
    return [q, *(parts if len(parts) >= 2 else [])], clause_spans(q, tl.CLAUSE_MIN_TERMS)


def rows(texts):
    lens = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
    return branch_mod.padded_rows(lens, branch_mod.length_buckets(lens))


calls = [call_of(q) for q in queries]
keep = [i for i, (t, _) in enumerate(calls) if rows(t) >= branch_mod.WIDE_MIN_ROWS]
r = np.array([rows(calls[i][0]) for i in keep])
multi = np.array([len(calls[i][0]) > 1 for i in keep])
enc = {"main": main, "branch": branch}
for i in keep[:10]:
    for x in enc.values():
        x.encode_request_spans(*calls[i])
times = {n: [[] for _ in keep] for n in enc}
diff = 0.0
load = [os.getloadavg()[0]]
print(f"start {time.strftime('%H:%M:%S', time.gmtime())} load {load[0]:.2f}; {len(keep)} requests of >= "
      f"{branch_mod.WIDE_MIN_ROWS} rows ({multi.sum()} of several texts)", flush=True)
for p in range(passes):
    for j, i in enumerate(keep):
        order = ["main", "branch"] if (j + p) % 2 == 0 else ["branch", "main"]
        out = {}
        for n in order:
            t = time.perf_counter()
            out[n] = enc[n].encode_request_spans(*calls[i])
            times[n][j].append((time.perf_counter() - t) * 1000)
        if p == 0:
            diff = max(diff, float(np.abs(out["main"][0] - out["branch"][0]).max()),
                       max((float(np.abs(a - b).max()) for a, b in zip(out["main"][1], out["branch"][1])
                            if a is not None), default=0.0))
    load.append(os.getloadavg()[0])
med = {n: np.array([np.median(v) for v in times[n]]) for n in enc}
print(f"largest difference of vectors (request, sentences, clauses) main vs branch: {diff:.1e}")
for label, sel in (("all", np.ones(len(keep), bool)), ("several texts", multi), ("one text", ~multi),
                   ("rows >= 200", r >= 200), ("rows >= 400", r >= 400)):
    if sel.any():
        a, b = med["main"][sel], med["branch"][sel]
        print(f"{label:14s} n={sel.sum():3d}  main p50 {np.percentile(a, 50):7.2f} p99 {np.percentile(a, 99):7.2f} "
              f"mean {a.mean():7.2f} | branch p50 {np.percentile(b, 50):7.2f} p99 {np.percentile(b, 99):7.2f} "
              f"mean {b.mean():7.2f} | mean ratio {b.mean() / a.mean():.3f}, p99 ratio "
              f"{np.percentile(b, 99) / np.percentile(a, 99):.3f}")
# the eval's p99 over its 1,000 requests if only this call changed: the < 40-row requests' time is the same code
print(f"load average during passes {' '.join(f'{x:.1f}' for x in load)}; end {time.strftime('%H:%M:%S', time.gmtime())}")
