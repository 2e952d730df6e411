"""Where a search worker's CPU goes: a py-spy recording (``--format raw``) summed by kind of work.

  py-spy record --pid PID --duration 20 --rate 250 --format raw --output /tmp/search.raw
  .venv/bin/python scripts/profile_breakdown.py /tmp/search.raw [--top 25]

Each sample is a thread's stack. Samples of a thread waiting (an idle pool thread, the event loop
in select, a condition wait: py-spy does not always tell them apart) are counted apart and left
out of the percentages, which are of the samples that ran Python or native code. A sample counts
for the first kind (in the order below) that one of its frames matches, innermost frame first,
so "query embedding" includes the tokenizer and ONNX Runtime called from it, and "postgres
driver" is psycopg's own Python (the statements run in Postgres, another process). Also prints
the innermost frames that took most samples.
"""

from __future__ import annotations

import argparse
import collections
import re

IDLE = re.compile(r"^(_worker \(concurrent/futures/thread\.py|Condition\.wait|Event\.wait|\w*Selector\.select|"
                  r"_PollLikeSelector\.select|Queue\.get|wait_async \()")
KINDS = [  # (name, pattern matched against "function (file:line)" frames)
    ("query embedding (tokenizer + ONNX Runtime)", r"onnx_query|onnxruntime|tokenizers|query_batch"),
    ("JSON encode/decode", r"\bjson[/\\]|orjson|encode_json|json_response|read_json|check_json_value"),
    ("request validation (pydantic)", r"pydantic|parse_request|validation\.py"),
    ("KV caches (diskcache, sqlite)", r"diskcache|sqlite3|cache\.py|kv\.py"),
    ("postgres driver (psycopg, pool)", r"psycopg|pgvector"),
    ("semantic guard (signature)", r"semantic_guard"),
    ("result shaping", r"engine\.py.*shape|\bshape \("),
    ("HTTP server (aiohttp)", r"aiohttp|web_protocol|web_app|http_parser|streams\.py"),
    ("asyncio loop and threads", r"asyncio|selectors|threading|concurrent"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("raw", help="py-spy record --format raw output")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    kinds: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    total = idle = 0
    compiled = [(name, re.compile(pattern)) for name, pattern in KINDS]
    for line in open(args.raw, encoding="utf-8"):
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
        for frame in reversed(frames):
            kind = next((name for name, pattern in compiled if pattern.search(frame)), None)
            if kind:
                kinds[kind] += n
                break
        else:
            kinds["other Python"] += n
    print(f"{total} samples running, {idle} waiting (left out)")
    for name, n in kinds.most_common():
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("innermost frames:")
    for frame, n in leaves.most_common(args.top):
        print(f"  {100 * n / total:5.1f}%  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
