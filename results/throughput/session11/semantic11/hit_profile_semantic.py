"""Inclusive shares of a semantic hit's CPU in a py-spy recording of the search worker (``--format raw``), and
microseconds per hit when the worker's CPU per hit is given (eleventh session, semantic11; after session10/hit_profile.py).

    .venv/bin/python results/throughput/session11/semantic11/hit_profile_semantic.py PROFILE.raw [--cpu-ms-per-hit 6.58]

Samples whose innermost frame is a wait (idle pool threads, the loop in select) are left out, as in
scripts/profile_breakdown.py; a sample counts for every row whose pattern one of its frames matches
(inclusive), so rows overlap (a row nested in another is indented under it).
"""

from __future__ import annotations

import argparse
import collections
import re

IDLE = re.compile(r"^(_worker \(concurrent/futures/thread\.py|Condition\.wait|Event\.wait|\w*Selector\.select|"
                  r"_PollLikeSelector\.select|Queue\.get|wait_async \()")
ROWS = [  # (depth, label, pattern on one frame "Qualified.name (file:line)")
    (0, "reading the request (data_received: aiohttp's parser, the transport's read)", r"data_received "),
    (0, "RequestHandler._handle_request (the handler, then the response)", r"^RequestHandler\._handle_request "),
    (1, "error_middleware and below", r"^error_middleware "),
    (2, "POST /search handler", r"^search \(workers/search\.py"),
    (3, "Tenancy.authenticate", r"^Tenancy\.authenticate "),
    (3, "read_json_bytes (the body)", r"^read_json_bytes "),
    (3, "SearchService.search_json", r"^SearchService\.search_json "),
    (4, "parse + resolve (a body not remembered)", r"^SearchService\.parse |^SearchService\.resolve |^decode_json_object "),
    (4, "ParsedMemo.get/put + fresh_decision", r"^ParsedMemo\.|^Parsed\.fresh_decision "),
    (4, "SearchService.scope (of it read_sequences)", r"^SearchService\.scope "),
    (5, "read_sequences (diskcache)", r"^read_sequences "),
    (4, "SearchService.cache_exact", r"^SearchService\.cache_exact "),
    (4, "SearchService.embed (the hand-off; the model runs on its thread)", r"^SearchService\.embed "),
    (4, "SearchService.cache_semantic", r"^SearchService\.cache_semantic "),
    (5, "PgVectorIndex.query (the lookup statement: psycopg)", r"^PgVectorIndex\.query "),
    (5, "signature (semantic_guard)", r"^signature "),
    (5, "SearchService._cached (front copy / KV load)", r"^SearchService\._cached "),
    (6, "cache.load_entry (KV: the entry unpickled)", r"^load_entry "),
    (6, "ExactFront.put", r"^ExactFront\.put "),
    (4, "SearchService._answer", r"^SearchService\._answer "),
    (5, "SearchService.telemetry", r"^SearchService\.telemetry "),
    (6, "answer_columns (a copy's first hit)", r"^answer_columns |^Router\.answer_columns "),
    (6, "Router.record_answer (the row)", r"^Router\.record_answer "),
    (5, "Copy.encoded (a copy's first hit: encode_payload)", r"^Copy\.encoded |^encode_payload "),
    (5, "splice", r"^splice "),
    (3, "json_bytes_response (web.Response)", r"^json_bytes_response "),
    (1, "RequestHandler.finish_response (headers, the send)", r"^RequestHandler\.finish_response "),
    (0, "query embedding thread (QueryBatcher, tokenizer, ONNX Runtime)", r"onnx_query|onnxruntime|tokenizers|query_batch"),
    (0, "psycopg anywhere", r"psycopg"),
    (0, "TelemetryWriter._write (the group's COPY)", r"^TelemetryWriter\._write "),
    (0, "garbage collector", r"gc_collect|collect \(gc"),
    (0, "anything else (the loop itself, callbacks)", None),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", nargs="+")
    parser.add_argument("--cpu-ms-per-hit", type=float, help="the worker's CPU per hit (load_search's exact/wrk line)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    total = idle = 0
    compiled = [(d, label, re.compile(p) if p else None) for d, label, p in ROWS]
    for path in args.raw:
        for line in open(path, encoding="utf-8"):
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            frames = stack.split(";")
            if IDLE.search(frames[-1]):
                idle += n
                continue
            total += n
            leaves[frames[-1]] += n
            matched_any = False
            for _, label, pattern in compiled:
                if pattern is not None and any(pattern.search(f) for f in frames):
                    counts[label] += n
                    matched_any = True
            if not matched_any:
                counts["anything else (the loop itself, callbacks)"] += n
    print(f"{total} running samples ({idle} idle left out)")
    per_hit = args.cpu_ms_per_hit
    for depth, label, _ in ROWS:
        share = counts[label] / total if total else 0.0
        us = f"  {share * per_hit * 1000:6.1f} us/hit" if per_hit else ""
        print(f"{'  ' * depth}{label:<{80 - 2 * depth}} {counts[label]:6d}  {share * 100:5.1f}%{us}")
    print("\ninnermost frames:")
    for frame, n in leaves.most_common(args.top):
        print(f"  {n:6d}  {n / total * 100:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
