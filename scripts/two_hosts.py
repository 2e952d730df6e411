"""Two hosts on one Redis KV under load: stale answers while documents change, and a key's rate limit.

Starts host A (upload, ingest, search, with Postgres, Redis and moto) and host B (search) with a state
folder of its own on A's services only, as tests/hosts does. One entity holds --documents MS MARCO
passages, each ending with a marker "Edition <document>-<edition>". Then, at once:

- --agents agents search through A's and B's search workers in turn (caches on: each query is one of
  the documents' own sentences, so answers repeat and the exact and semantic caches serve most of them);
- one writer replaces (new edition), deletes and re-adds documents through A, one at a time, and notes
  the moment each change is committed (the upload's document is ready at the new version; a delete
  has returned).

A result is stale when its search was sent after a change to its document was committed and it
still shows what the change removed: an older edition, or a deleted document. A result sent while
a change is in flight may show either side. Additions must be seen at once: a search for a document
replaced or re-added, sent after that was committed and answered before its next change began, that
does not find it is counted as missed (among documents their own query ranks first as first
uploaded: the others are misses of ranking).

Then the rate limit: both hosts' search workers restart with --rate requests/s per key, and
--agents agents send searches through both for --rate-seconds; the rate both let through
(minus the bucket's burst of 2 x rate) against the configured one.

  .venv/bin/python scripts/two_hosts.py --searches 10000

Ends with one JSON line: {"kind": "two_hosts", "searches", "changes", "stale", "missed",
"cache": {...}, "errors", "rate_configured", "rate_measured", "rate_ratio"}.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "msmarco"
MARKER = re.compile(r"Edition (d\d+)-(\d+)\.")
ENTITY = "hosts"


class History:
    """Per document, the committed (time, edition, alive) states in order, and when each change began."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.states: dict[str, list[tuple[int, bool]]] = {}
        self.begun: dict[str, list[float]] = {}

    def begin(self, document: str) -> None:
        self.begun.setdefault(document, []).append(time.monotonic())

    def quiet(self, document: str, sent: float, answered: float) -> bool:
        """No change to the document was in flight when a search was sent, nor began before its answer
        came: every change begun by then had committed before it was sent."""
        begun = bisect.bisect_right(self.begun.get(document, []), answered)
        return begun == bisect.bisect_right(self.times.get(document, []), sent)

    def commit(self, document: str, edition: int, alive: bool) -> None:
        self.times.setdefault(document, []).append(time.monotonic())
        self.states.setdefault(document, []).append((edition, alive))

    def at(self, document: str, sent: float) -> tuple[int, bool] | None:
        """The document's committed state when a search was sent (None: never committed yet)."""
        at = bisect.bisect_right(self.times.get(document, []), sent)
        return self.states[document][at - 1] if at else None


def text_of(passage: str, document: str, edition: int) -> str:
    return f"{passage} Edition {document}-{edition}."


def probe(passage: str) -> str:
    """The query for a document: its first sentence (at most 16 words)."""
    return " ".join(re.split(r"(?<=[.!?])\s", passage, maxsplit=1)[0].split()[:16])


async def seed(client, passages: list[str], history: History) -> None:
    for i, passage in enumerate(passages):
        history.begin(f"d{i}")
        await client.upload_text(ENTITY, f"d{i}", text_of(passage, f"d{i}", 1))
    for i in range(len(passages)):
        await client.wait_ready(ENTITY, f"d{i}", timeout=300)
        history.commit(f"d{i}", 1, True)


async def writer(client, passages: list[str], history: History, stop: asyncio.Event, rng: random.Random,
                 counts: Counter) -> None:
    editions = {f"d{i}": 1 for i in range(len(passages))}
    alive = set(editions)
    while not stop.is_set():
        document = f"d{rng.randrange(len(passages))}"
        passage = passages[int(document[1:])]
        history.begin(document)
        if document in alive and rng.random() < 0.25:
            await client.delete_document(ENTITY, document)
            alive.discard(document)
            history.commit(document, editions[document], False)
            counts["deleted"] += 1
            continue
        editions[document] += 1
        edition = editions[document]
        uploaded = await client.upload_text(ENTITY, document, text_of(passage, document, edition))
        ready = await client.wait_ready(ENTITY, document, version=uploaded.version, timeout=300, interval=0.05)
        assert ready.status == "ready", ready
        history.commit(document, edition, True)
        counts["replaced" if document in alive else "added"] += 1
        alive.add(document)


async def searcher(clients, queries: list[tuple[str, str]], history: History, left: list[int],
                   rng: random.Random, tally: Counter, stale: list[dict], retrievable: set[str]) -> None:
    from edgeindex_client import EdgeIndexClientError

    turn = rng.randrange(len(clients))
    while left[0] > 0:
        left[0] -= 1
        turn += 1
        document, query = queries[rng.randrange(len(queries))]
        sent = time.monotonic()
        try:
            answer = await clients[turn % len(clients)].search(query, entity_ids=[ENTITY], k=5)
            answered = time.monotonic()
        except EdgeIndexClientError as error:
            tally["errors"] += 1
            print(f"search failed: {error}", flush=True)
            continue
        tally[f"cache_{answer.cache}"] += 1
        seen: set[str] = set()
        first = None
        for result in answer.results:
            found = MARKER.search(result.text or "")
            if not found:
                continue
            shown, edition = found.group(1), int(found.group(2))
            seen.add(shown)
            first = first or shown
            state = history.at(shown, sent)
            if state is not None and (state[0] > edition or (state[0] == edition and not state[1])):
                stale.append({"query": query, "document": shown, "shown": edition, "committed": state,
                              "cache": answer.cache})
        state = history.at(document, sent)
        if state is None or not state[1]:
            continue
        if first == document and state[0] == 1:
            # its own query ranks it first as first uploaded: a later edition (the same text but for its
            # marker) missing from the top 5 is then not a ranking flip at the cut
            retrievable.add(document)
        elif (document not in seen and state[0] > 1 and document in retrievable
              and history.quiet(document, sent, answered)):
            tally["missed"] += 1          # replaced or re-added, committed, and not found
            print("missed:", {"query": query, "document": document, "committed": state, "cache": answer.cache,
                              "shown": sorted(seen)}, flush=True)


async def stale_run(hosts, key: str, args) -> dict:
    from edgeindex.evaluation import loader
    from edgeindex_client import AsyncClient

    rng = random.Random(7)
    passages = [p for p in loader.read_passages(DATA / "corpus.jsonl") if 200 < len(p) < 900][:args.documents]
    history = History()
    queries = [(f"d{i}", probe(p)) for i, p in enumerate(passages)]
    a, b = hosts
    admin = AsyncClient(key, upload_url=a.url("upload"), search_url=a.url("search"), max_retries=0, timeout=120)
    clients = [AsyncClient(key, upload_url=s.url("upload") if s is a else a.url("upload"),
                           search_url=s.url("search"), max_retries=0, timeout=120) for s in (a, b)]
    counts: Counter = Counter()
    tally: Counter = Counter()
    stale: list[dict] = []
    try:
        await seed(admin, passages, history)
        stop = asyncio.Event()
        change = asyncio.create_task(writer(admin, passages, history, stop, rng, counts))
        started = time.perf_counter()
        left = [args.searches]
        retrievable: set[str] = set()
        await asyncio.gather(*(searcher(clients, queries, history, left, random.Random(i), tally, stale, retrievable)
                               for i in range(args.agents)))
        stop.set()
        await change
        wall = time.perf_counter() - started
    finally:
        for client in (admin, *clients):
            await client.aclose()
    for example in stale[:5]:
        print("stale:", example, flush=True)
    return {"searches": args.searches, "seconds": round(wall, 1), "changes": dict(counts),
            "stale": len(stale), "missed": tally.pop("missed", 0), "errors": tally.pop("errors", 0),
            "cache": {k.removeprefix("cache_"): v for k, v in sorted(tally.items())}}


async def rate_run(hosts, key: str, rate: float, seconds: float, agents: int) -> dict:
    from edgeindex_client import AsyncClient, RateLimitError

    clients = [AsyncClient(key, search_url=s.url("search"), upload_url=s.url("upload"), max_retries=0, timeout=60)
               for s in hosts]
    answered, limited = [0], [0]
    deadline = time.monotonic() + seconds

    async def agent(i: int) -> None:
        turn = i
        while time.monotonic() < deadline:
            turn += 1
            try:
                await clients[turn % 2].search(f"bread {turn % 5}", entity_ids=[ENTITY], k=1)
                answered[0] += 1
            except RateLimitError:
                limited[0] += 1

    started = time.perf_counter()
    try:
        await asyncio.gather(*(agent(i) for i in range(agents)))
    finally:
        for client in clients:
            await client.aclose()
    elapsed = time.perf_counter() - started
    measured = (answered[0] - 2 * rate) / elapsed       # the bucket's burst, then the rate
    return {"rate_configured": rate, "rate_measured": round(measured, 2), "rate_ratio": round(measured / rate, 3),
            "rate_answered": answered[0], "rate_limited": limited[0], "rate_seconds": round(elapsed, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=10_000)
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s per key in the rate-limit run")
    parser.add_argument("--rate-seconds", type=float, default=30.0)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    with tempfile.TemporaryDirectory(prefix="edgeindex-hosts-") as folder:
        base = {**os.environ, "EDGEINDEX_ADMIN_KEY": "hosts-admin", "EDGEINDEX_KV_BACKEND": "redis",
                "EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": "0"}

        def host(name: str, workers: list[str], **shared: str) -> DevStack:
            state = Path(folder) / name
            state.mkdir()
            environ = {**base, **shared, "EDGEINDEX_STATE_DIR": str(state)}
            for worker in ("upload", "ingest", "search", "mcp"):
                environ[f"EDGEINDEX_{worker.upper()}_PORT"] = str(free_port())
            config = config_module.load(ROOT / "wrangler.toml", environ=environ)
            return DevStack(config, workers=workers, environ=environ,
                            worker_output=open(state / "workers.log", "w"))

        with host("a", ["upload", "ingest", "search"]) as a:
            shared = {"EDGEINDEX_KV_URL": a.kv_url, "EDGEINDEX_DATABASE_URL": a.dsn,
                      "EDGEINDEX_S3_ENDPOINT": a.s3_endpoint, "EDGEINDEX_SQS_ENDPOINT": a.sqs_endpoint}
            with host("b", ["search"], **shared) as b:
                from edgeindex_client import Client

                with Client("hosts-admin", base_url=a.url("upload")) as admin:
                    admin.create_entity(ENTITY, "user", ENTITY)
                    key = admin.create_key("two hosts", [ENTITY]).key
                line = {"kind": "two_hosts", **asyncio.run(stale_run((a, b), key, args))}
                print({k: v for k, v in line.items()}, flush=True)
                for stack in (a, b):
                    stack.stop_worker("search")
                    stack.start_worker("search", extra_env={"EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": str(args.rate)})
                for stack in (a, b):
                    stack.wait_healthy("search")
                line.update(asyncio.run(rate_run((a, b), key, args.rate, args.rate_seconds, args.agents)))
    print(json.dumps(line), flush=True)
    return 1 if line["stale"] or line["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
