"""(session14 copy of uncached11's: also reads --native recordings.)
A py-spy raw recording of the search worker, by purpose, in µs of worker CPU per request.

  .venv/bin/python breakdown_us.py RAW --cpu-ms 8.55 [--top 30]

--cpu-ms: the worker's CPU per request in the same phase (load_search's "CPU ms/request").
Each running sample is assigned to the first purpose (in PURPOSES order) one of its frames matches,
scanning frames outermost first for the purpose rules marked "outer" and innermost first for the rest.
Samples of idle threads are left out (as scripts/profile_breakdown.py does).
"""
import argparse
import collections
import re

IDLE = re.compile(r"^(_worker \(concurrent/futures/thread\.py|Condition\.wait|Event\.wait|\w*Selector\.select|"
                  r"_PollLikeSelector\.select|Queue\.get|wait_async \()")
PY_FRAME = re.compile(r"\.py:\d+\)$")
OWN_NATIVE = re.compile(r"onnxruntime|_psycopg|tokenizers")  # C work under a frame that looks idle is still work
# purpose decided by our own frames (anywhere in the stack), checked in this order
BY_OWN_FRAME = [
    ("embedding (tokenizer + ONNX)", r"onnx_query|onnxruntime|tokenizers|query_batch|embed_query"),
    ("telemetry row (record, grouped COPY)", r"^Router\.record|^Router\.record_answer|^results_json|^SearchService\.telemetry|"
                                             r"AsyncCopy|write_row|^copy \(psycopg"),
    ("cache stores (exact entry in KV, semantic pointer upsert)", r"StoreWriter|^SearchService\.store|_remember|store_many|"
                                                                  r"DiskKV\.(put|add_to_sets|transact)|executemany"),
    ("semantic-cache lookup", r"cache_semantic|PgVectorIndex\.query|semantic_guard"),
    ("statement building (params, literals, text)", r"^build_params|^planned_once|^statement_for|^build \(edgeindex/search/plan_reuse|"
                                                    r"Statement\.args|^lexical_text"),
    ("search statement (psycopg, pool)", r"retrieve_once|^search \(edgeindex/search/engine|plan_reuse\.py|tune_connection"),
    ("fusion / assembly (shape, payload)", r"^shape \(edgeindex/search/engine|^SearchService\.shape|^SearchService\.rerank|"
                                           r"answer_fields|^SearchContext\.response|^SearchService\.finish"),
    ("JSON (response encode, body decode)", r"json_response|json_bytes_response|encode_json|orjson|/json/|decode_json_object|read_json"),
    ("request parse + validation", r"parse_request|pydantic|^SearchService\.parse|^SearchService\.resolve|ParsedMemo"),
    ("scope, keys, auth, KV sequence reads", r"^SearchService\.scope|cache_keys|read_sequences|authenticate|Principal|tenancy|"
                                             r"cache_exact|^SearchService\._cached|DiskKV\.get"),
    ("aiohttp (request/response)", r"aiohttp|web_protocol|web_app|http_parser|streams\.py"),
    ("psycopg (other: pool)", r"psycopg|pgvector"),
    ("asyncio loop and threads", r"asyncio|selectors|threading|concurrent"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw")
    parser.add_argument("--cpu-ms", type=float, required=True)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    compiled = [(name, re.compile(p)) for name, p in BY_OWN_FRAME]
    kinds, leaves = collections.Counter(), collections.Counter()
    total = idle = 0
    for line in open(args.raw, encoding="utf-8"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        # with --native the innermost frame is C (epoll_wait, a futex in libc): idle is decided by the
        # innermost Python frame, and the whole stack of a thread parked in one of the IDLE frames is left out
        python = [f for f in frames if PY_FRAME.search(f)]
        if IDLE.search(frames[-1]) or (python and IDLE.search(python[-1]) and not OWN_NATIVE.search(frames[-1])):
            idle += n
            continue
        total += n
        leaves[frames[-1]] += n
        joined = frames
        for name, pattern in compiled:
            if any(pattern.search(f) for f in joined):
                kinds[name] += n
                break
        else:
            kinds["other"] += n
    print(f"{total} samples running, {idle} waiting (left out); worker CPU {args.cpu_ms} ms/request")
    print(f"| purpose | share | µs per request |\n| --- | --- | --- |")
    for name, n in kinds.most_common():
        print(f"| {name} | {100 * n / total:.1f}% | {1000 * args.cpu_ms * n / total:.0f} |")
    print("innermost frames:")
    for frame, n in leaves.most_common(args.top):
        print(f"  {100 * n / total:5.1f}%  {1000 * args.cpu_ms * n / total:6.0f} µs  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
