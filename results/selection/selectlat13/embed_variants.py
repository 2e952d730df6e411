"""Per-request query-encoder time of a select, several ways of running the same texts, alternating.

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/selection/selectlat13/embed_variants.py --queries 1000 \
        --min-rows 100 --variants main,spin,spinstop,split

(session 9's script, results/selection/session9/, with the variants spinstop and split added)

The texts are what a select embeds (the request, and its sentences when it has two or more). Variants:
  main      OnnxQueryEncoder.encode_request of the checkout it runs in (length buckets, one after the
            other; 2 intra-op threads from WIDE_MIN_ROWS rows; on main they sleep between operators)
  one       the same buckets, one after the other, on one thread
  pair      the two buckets at once on two single-thread sessions (inter-op instead of intra-op)
  spin      main's scheme with the 2-thread session's threads spinning between operators (and after the
            call, for ORT's spin time: no session.force_spinning_stop)
  spinstop  spin, with session.force_spinning_stop (the pool stops spinning when a call ends)
  split     the call's texts cut in two halves of about equal padded rows (each half in select's length
            buckets), the halves at once on two single-thread sessions: one thread hand-off per call, not
            one per operator
  nospin    main's scheme, the 2-thread session's threads asleep between operators (main's setting)
  int8      (with --int8 PATH) main's scheme on a dynamically quantized copy of the graph
Prints the medians per row band, the slowest requests, p50/p99 over the requests, and the largest
difference of each variant's vectors to main's.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime

from edgeindex.bindings import onnx_query
from edgeindex.bindings.ai import local_embedder
from edgeindex.selection.tools import segments


def session(path, threads: int, spin: bool = False, stop: bool = False):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    if stop:
        options.add_session_config_entry("session.force_spinning_stop", "1")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def feeds_of(enc, texts, groups=None):
    encoded = enc._tokenizer(texts, truncation=True, max_length=enc._max_tokens)
    ids = [np.asarray(r, dtype=np.int64) for r in encoded["input_ids"]]
    groups = groups or onnx_query.length_buckets([len(r) for r in ids])
    out = []
    for group in groups:
        width = max(len(ids[i]) for i in group)
        f = {n: np.full((len(group), width), enc._pad_id if n == "input_ids" else 0, np.int64)
             for n in onnx_query.INPUTS}
        for row, i in enumerate(group):
            f["input_ids"][row, :len(ids[i])] = ids[i]
            f["attention_mask"][row, :len(ids[i])] = 1
        out.append((group, f))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--int8", type=Path)
    parser.add_argument("--variants", default="main,one,pair")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--min-rows", type=int, default=0, help="time only requests of this many token rows or more")
    args = parser.parse_args()
    lines = Path("/work/shared/data/tools-bfcl/queries.jsonl").read_text().splitlines()[:args.queries]
    queries = [json.loads(line)["query"] for line in lines]
    embedder = local_embedder()
    embedder.prepare_queries()
    enc = embedder._queries
    ones = [session(enc.path, 1), session(enc.path, 1)]
    pool = ThreadPoolExecutor(1)
    spinning = session(enc.path, onnx_query.WIDE_THREADS, spin=True)
    asleep = session(enc.path, onnx_query.WIDE_THREADS)
    stopping = session(enc.path, onnx_query.WIDE_THREADS, spin=True, stop=True)
    q8 = [session(args.int8, 1), session(args.int8, 1)] if args.int8 else None
    q8wide = session(args.int8, 2) if args.int8 else None

    def run(sess, feeds):
        return sess.run([onnx_query.OUTPUT], feeds)[0]

    def assemble(n, parts):
        out = np.zeros((n, 384), np.float32)
        for group, v in parts:
            out[group] = v
        return out

    def v_main(texts, fs):
        return enc.encode_request(texts)

    def v_one(texts, fs):
        return assemble(len(texts), [(g, run(ones[0], f)) for g, f in fs])

    def v_pair(texts, fs):
        if len(fs) < 2:
            return enc.encode_request(texts)
        other = pool.submit(run, ones[1], fs[1][1])
        first = run(ones[0], fs[0][1])
        return assemble(len(texts), [(fs[0][0], first), (fs[1][0], other.result())])

    def v_spin(texts, fs):
        rows = sum(f["input_ids"].size for _, f in fs)
        s = spinning if rows >= onnx_query.WIDE_MIN_ROWS else enc._session
        return assemble(len(texts), [(g, run(s, f)) for g, f in fs])

    def v_spinstop(texts, fs):
        rows = sum(f["input_ids"].size for _, f in fs)
        s = stopping if rows >= onnx_query.WIDE_MIN_ROWS else enc._session
        return assemble(len(texts), [(g, run(s, f)) for g, f in fs])

    def halves(texts):
        """Two sets of texts of about equal token count (longest first, each to the lighter set)."""
        lens = [len(x) for x in enc._tokenizer(texts, truncation=True, max_length=enc._max_tokens)["input_ids"]]
        sets, load = ([], []), [0, 0]
        for i in sorted(range(len(texts)), key=lambda i: -lens[i]):
            j = 0 if load[0] <= load[1] else 1
            sets[j].append(i)
            load[j] += lens[i]
        return [s for s in sets if s]

    def v_split(texts, fs):
        rows = sum(f["input_ids"].size for _, f in fs)
        if rows < onnx_query.WIDE_MIN_ROWS or len(texts) < 2:
            return v_nospin(texts, fs)
        a, b = halves(texts)
        fa = [([a[i] for i in g], f) for g, f in feeds_of(enc, [texts[i] for i in a])]
        fb = [([b[i] for i in g], f) for g, f in feeds_of(enc, [texts[i] for i in b])]
        other = pool.submit(lambda: [(g, run(ones[1], f)) for g, f in fb])
        first = [(g, run(ones[0], f)) for g, f in fa]
        return assemble(len(texts), first + other.result())

    def v_nospin(texts, fs):
        rows = sum(f["input_ids"].size for _, f in fs)
        s = asleep if rows >= onnx_query.WIDE_MIN_ROWS else enc._session
        return assemble(len(texts), [(g, run(s, f)) for g, f in fs])

    def v_int8(texts, fs):
        rows = sum(f["input_ids"].size for _, f in fs)
        s = q8wide if rows >= onnx_query.WIDE_MIN_ROWS else q8[0]
        return assemble(len(texts), [(g, run(s, f)) for g, f in fs])

    def v_int8pair(texts, fs):
        if len(fs) < 2:
            return v_int8(texts, fs)
        other = pool.submit(run, q8[1], fs[1][1])
        first = run(q8[0], fs[0][1])
        return assemble(len(texts), [(fs[0][0], first), (fs[1][0], other.result())])

    variants = {"main": v_main, "one": v_one, "pair": v_pair, "spin": v_spin, "nospin": v_nospin, "spinstop": v_spinstop, "split": v_split, "int8": v_int8, "int8pair": v_int8pair}
    names = args.variants.split(",")
    texts_of, rows_of, feeds = [], [], []
    for q in queries:
        parts = segments(q)
        texts = [q, *(parts if len(parts) >= 2 else [])]
        texts_of.append(texts)
        fs = feeds_of(enc, texts)
        feeds.append(fs)
        rows_of.append(sum(f["input_ids"].size for _, f in fs))
    keep = [i for i, r in enumerate(rows_of) if r >= args.min_rows]
    queries, texts_of, feeds, rows_of = ([xs[i] for i in keep] for xs in (queries, texts_of, feeds, rows_of))
    times = {n: [[] for _ in queries] for n in names}
    diff = {n: 0.0 for n in names}
    cos = {n: 1.0 for n in names}
    for i in range(min(20, len(queries))):
        for n in names:
            variants[n](texts_of[i], feeds[i])
    load = [os.getloadavg()[0]]
    for p in range(args.passes):
        for i, texts in enumerate(texts_of):
            order = names[p % len(names):] + names[:p % len(names)]
            if i % 2:
                order = order[::-1]
            ref = None
            for n in order:
                mark = time.perf_counter()
                v = variants[n](texts, feeds[i])
                times[n][i].append((time.perf_counter() - mark) * 1000)
                if p == 0:
                    base = enc.encode_request(texts) if ref is None else ref
                    ref = base
                    diff[n] = max(diff[n], float(np.abs(v - base).max()))
                    cos[n] = min(cos[n], float((v * base).sum(1).min()))
        load.append(os.getloadavg()[0])
    med = {n: np.array([float(np.median(v)) for v in times[n]]) for n in names}
    print("variant   p50     p99     mean    max-diff  min-cos")
    for n in names:
        print(f"{n:8s} {np.percentile(med[n], 50):6.2f}  {np.percentile(med[n], 99):6.2f}  {med[n].mean():6.2f}"
              f"  {diff[n]:.1e}  {cos[n]:.6f}")
    rows = np.array(rows_of)
    for lo, hi in ((0, 20), (20, 30), (30, 40), (40, 60), (60, 1000)):
        sel = (rows >= lo) & (rows < hi)
        if sel.any():
            print(f"rows [{lo},{hi}) n={sel.sum():3d}  " + "  ".join(f"{n} {med[n][sel].mean():6.2f}" for n in names))
    multi = np.array([len(fs) > 1 for fs in feeds])
    print(f"two-bucket requests n={multi.sum()}  " + "  ".join(f"{n} {med[n][multi].mean():6.2f}" for n in names))
    order = np.argsort(-med[names[0]])
    print("slowest: rows, texts, " + ", ".join(names))
    for i in order[:15]:
        print(f"{rows_of[i]:4d} {len(texts_of[i]):2d} " + " ".join(f"{med[n][i]:7.2f}" for n in names))
    print(f"load average during passes {' '.join(f'{x:.1f}' for x in load)}")
    if args.out:
        args.out.write_text("".join(json.dumps({"query": q, "rows": r, **{n: med[n][i] for n in names}}) + "\n"
                                    for i, (q, r) in enumerate(zip(queries, rows_of))))


if __name__ == "__main__":
    main()
