"""(session14 copy of uncached11's: the slowest rows name their request number.)
The 1-agent uncached tail: which requests are slow, and what they spent their time on.

Starts load_search's stack (12,000 chunks, the search worker only), then sends N uncached requests
(hybrid, k 10, a unique alpha each: load_search's uncached phase) from one agent, and prints the
slowest 2% with the server's own timings, the query's length in tokens, and (if the worker runs
with gc_log_sitecustomize on PYTHONPATH) the gen-2 collections that overlapped them.

  cd WORKTREE && flock /tmp/edgeindex-bench.lock .venv/bin/python .../tail_lab.py --requests 600 [--gclog DIR]
"""
import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT / "scripts"))
import load_search  # noqa: E402


async def run(url, key, n, agents=1):
    from edgeindex_client import AsyncClient, SearchRequest
    queries = [json.loads(l)["text"] for l in open(load_search.DATA / "queries.jsonl", encoding="utf-8")]
    out = []
    async with AsyncClient(key, search_url=url, upload_url=url, max_retries=0, timeout=60) as client:
        for q in queries[:20]:  # warm-up
            await client.search_request(SearchRequest(entity_ids=[load_search.ENTITY], query=q, cache=False))
        for i in range(n):
            q = queries[i % len(queries)]
            body = SearchRequest(entity_ids=[load_search.ENTITY], query=q, k=10, alpha=round(0.7 - i * 1e-6 - 0.01, 6))
            t0 = time.time()
            s = time.perf_counter()
            a = await client.search_request(body)
            out.append({"i": i, "t0": t0, "ms": (time.perf_counter() - s) * 1000, "took": a.took_ms,
                        "q": q, "timings": a.timings, "cache": a.cache})
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=600)
    p.add_argument("--chunks", type=int, default=12000)
    p.add_argument("--gclog", default=None, help="dir where the worker's gc log (gc-<pid>.jsonl) goes")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port
    import urllib.request
    with tempfile.TemporaryDirectory(prefix="edgeindex-tail-") as state:
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state, "EDGEINDEX_SEARCH_PROCESSES": "1",
                   "EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": "0"}
        for name in ("upload", "ingest", "search"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        with open(Path(state) / "workers.log", "w") as log:
            stack = DevStack(config, workers=["upload", "search"], worker_output=log,
                             environ={**environ, "EDGEINDEX_ADMIN_KEY": "load-admin"})
            stack.start()
            try:
                asyncio.run(load_search.load_chunks(stack.dsn, args.chunks))
                req = urllib.request.Request(f"{stack.url('upload')}/admin/keys", method="POST",
                    data=json.dumps({"name": "load", "entity_ids": [load_search.ENTITY]}).encode(),
                    headers={"Authorization": f"Bearer {stack.admin_key}", "Content-Type": "application/json"})
                with urllib.request.urlopen(req) as resp:
                    key = json.loads(resp.read())["key"]
                print("load", os.getloadavg()[0], flush=True)
                rows = asyncio.run(run(stack.url("search"), key, args.requests))
                print("load", os.getloadavg()[0], flush=True)
            finally:
                stack.stop()
    from tokenizers import Tokenizer  # noqa
    ms = np.array([r["ms"] for r in rows])
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    print(f"n {len(rows)}  client p50 {p50:.1f} p90 {p90:.1f} p99 {p99:.1f} max {ms.max():.1f}")
    parts = sorted({k for r in rows for k in (r["timings"] or {})})
    for k in parts:
        v = np.array([(r["timings"] or {}).get(k, 0) for r in rows])
        print(f"  {k:<20} p50 {np.percentile(v,50):6.2f} p99 {np.percentile(v,99):6.2f} max {v.max():6.2f}")
    gc = []
    if args.gclog:
        for f in Path(args.gclog).glob("gc-*.jsonl"):
            gc += [json.loads(l) for l in open(f)]
    slow = sorted(rows, key=lambda r: -r["ms"])[: max(len(rows) // 50, 5)]
    print("slowest:")
    for r in slow:
        overl = [g for g in gc if g["start"] < r["t0"] + r["ms"] / 1000 and g["end"] > r["t0"]]
        gcs = ",".join(f"g{g['gen']}:{(g['end']-g['start'])*1000:.1f}ms" for g in overl)
        t = {k: v for k, v in (r["timings"] or {}).items()}
        print(f"  #{r['i']:<4d} {r['ms']:6.1f} took {r['took']:6.1f} chars {len(r['q']):3d} {t} gc[{gcs}] q={r['q'][:60]!r}")
    # correlation of client ms with query length
    lens = np.array([len(r["q"]) for r in rows]); emb = np.array([(r["timings"] or {}).get("embed_ms", 0) for r in rows])
    print(f"corr(ms, chars) {np.corrcoef(ms, lens)[0,1]:.2f}  corr(embed_ms, chars) {np.corrcoef(emb, lens)[0,1]:.2f}")
    if gc:
        g2 = [g for g in gc if g["gen"] == 2]
        print(f"gc: {len(gc)} collections, gen2 {len(g2)}, gen2 ms max {max(((g['end']-g['start'])*1000 for g in g2), default=0):.1f}")
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r) for r in rows))


if __name__ == "__main__":
    main()
