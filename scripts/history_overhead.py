#!/usr/bin/env python
"""What document history costs: bytes per retained version, and ingest time with history against none.

    .venv/bin/python scripts/history_overhead.py [--documents 20] [--versions 5] [--edit 0.1]

It starts an ``edgeindex dev`` stack (upload, ingest and search workers) on a temporary state folder and
builds documents from the business-reports corpus (each report's parts, in order, as paragraphs).
Two entities get the same texts: one keeps history (the deployment's default retention), the other
none (``PUT /entities/{e}/history {"versions": 0}``). Every version after the first replaces
``--edit`` of each document's paragraphs with paragraphs of other reports; each version is ingested
into both entities one after the other (alternating which goes first), and the time until every
document is ready is taken per entity. Then it reads what each entity stores (row bytes of the live
chunks, of the version rows and of the archived chunks; indexes left out), and times searches of
the history-keeping entity: each query (a paragraph's opening words) plain (uncached), ``as_of`` now
and ``as_of`` the first version's time.

It ends with one JSON line: bytes_per_retained_version, retained_version_vs_live_document (the bytes
a retained version adds over a live document's), update_ingest_ratio (history kept over none, the
median of the update versions' times), live_p50_ms, as_of_p50_ms (the first version's time) and
as_of_vs_live (the ratio of those medians).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import statistics
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "business-reports" / "corpus.jsonl"


def reports(path: Path, limit: int) -> dict[str, list[str]]:
    """Report id → its parts' texts in order (the corpus holds each report cut in parts)."""
    parts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            report, cut, number = row["_id"].rpartition("_chunk_")
            if cut:  # a report in parts (the few whole ones are left out)
                parts[report].append((int(number), row["text"].strip()))
    chosen = sorted(parts, key=lambda r: (-len(parts[r]), r))[:limit]
    return {r: [text for _, text in sorted(parts[r])] for r in chosen}


def versions(docs: dict[str, list[str]], count: int, edit: float, seed: int = 11) -> list[dict[str, str]]:
    """``count`` versions of every document: each replaces ``edit`` of the previous one's paragraphs."""
    rng = random.Random(seed)
    pool = [p for paragraphs in docs.values() for p in paragraphs]
    current = {d: list(ps) for d, ps in docs.items()}
    out = [{d: "\n\n".join(ps) for d, ps in current.items()}]
    for _ in range(count - 1):
        for paragraphs in current.values():
            for i in rng.sample(range(len(paragraphs)), max(1, round(edit * len(paragraphs)))):
                paragraphs[i] = rng.choice(pool)
        out.append({d: "\n\n".join(ps) for d, ps in current.items()})
    return out


async def ingest(api, entity: str, texts: dict[str, str]) -> float:
    """Seconds from the first upload until the last document of this version was ready (the server's
    ``updated_at``, not the moment a poll saw it)."""
    started = datetime.now(UTC)
    uploaded = await asyncio.gather(*(api.upload_text(entity, d, t, content_type="text/markdown")
                                      for d, t in texts.items()))
    ready = await asyncio.gather(*(api.wait_ready(entity, doc.document_id, version=doc.version, timeout=1800)
                                   for doc in uploaded))
    return (max(doc.updated_at for doc in ready) - started).total_seconds()


async def search_times(api, entity: str, queries: list[str], as_of: datetime | None) -> list[float]:
    """Milliseconds per search (the server's took_ms), one query at a time."""
    took = []
    for query in queries:
        answer = await api.search(query, entity_ids=[entity], k=10, cache=False, as_of=as_of)
        took.append(answer.took_ms)
    return took


async def run(base: str, search: str, admin_key: str, dsn: str, args) -> dict:
    from edgeindex import sqlfiles
    from edgeindex.bindings.database import Database
    from edgeindex_client import AsyncClient

    docs = reports(Path(args.corpus), args.documents)
    texts = versions(docs, args.versions, args.edit)
    suffix = secrets.token_hex(3)
    entities = {"history": f"hist-{suffix}", "none": f"none-{suffix}"}
    async with AsyncClient(admin_key, upload_url=base, search_url=search, max_retries=0) as admin:
        for entity in entities.values():
            await admin.create_entity(entity)
        await admin.set_history_retention(entities["none"], versions=0)
        times: dict[str, list[float]] = {name: [] for name in entities}
        for v, version in enumerate(texts, start=1):
            order = list(entities) if v % 2 else list(entities)[::-1]
            for name in order:
                times[name].append(await ingest(admin, entities[name], version))
            print(f"version {v}: " + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in entities), flush=True)
            if v == 1:
                first_version_at = datetime.now(UTC)
        rng = random.Random(5)
        queries = [" ".join(p.split()[:8]) for p in rng.sample([p for ps in docs.values() for p in ps], 40)]
        await search_times(admin, entities["history"], queries[:5], None)  # warm: the query encoder, plans
        live = await search_times(admin, entities["history"], queries, None)
        as_of_now = await search_times(admin, entities["history"], queries, datetime.now(UTC))
        as_of_first = await search_times(admin, entities["history"], queries, first_version_at)
    db = Database(dsn, max_size=1)
    await db.open()
    try:
        sql = sqlfiles.load("benchmark.sql")["history_bytes"]
        sizes = {name: await db.fetchone(sql, {"entity": e}) for name, e in entities.items()}
    finally:
        await db.close()
    kept = sizes["history"]
    per_version = (kept["replaced_versions"] + kept["archive"]) / max(1, kept["retained"])
    live_document = (kept["live"] + kept["live_versions"]) / len(docs)
    ratio = statistics.median(times["history"][1:]) / statistics.median(times["none"][1:])
    chunks = kept["live_chunks"]
    print(f"{len(docs)} documents, {chunks} live chunks, {args.versions} versions, {args.edit:.0%} of paragraphs "
          f"edited per version")
    for name, row in sizes.items():
        print(f"{name:>8}: live chunks {row['live'] / 1e6:.2f} MB, version rows {(row['live_versions'] + row['replaced_versions']) / 1e3:.1f} kB, "
              f"archive {row['archive'] / 1e6:.2f} MB, retained versions {row['retained']}")
    print(f"a retained version: {per_version / 1e3:.1f} kB ({per_version / live_document:.1%} of a live document's "
          f"{live_document / 1e3:.1f} kB)")
    print(f"update ingest, median s: history {statistics.median(times['history'][1:]):.2f}, "
          f"none {statistics.median(times['none'][1:]):.2f} (ratio {ratio:.2f})")
    medians = {name: statistics.median(t) for name, t in
               (("live", live), ("as_of now", as_of_now), ("as_of version 1", as_of_first))}
    print("search took_ms p50 / max: " + ", ".join(f"{name} {m:.1f} / {max(t):.1f}" for (name, m), t in
                                                zip(medians.items(), (live, as_of_now, as_of_first), strict=True)))
    return {"bytes_per_retained_version": round(per_version), "retained_version_vs_live_document":
            round(per_version / live_document, 4), "update_ingest_ratio": round(ratio, 3),
            "live_p50_ms": round(medians["live"], 2), "as_of_p50_ms": round(medians["as_of version 1"], 2),
            "as_of_vs_live": round(medians["as_of version 1"] / medians["live"], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=20, help="reports, the longest first")
    parser.add_argument("--versions", type=int, default=5, help="versions of every document")
    parser.add_argument("--edit", type=float, default=0.1, help="share of paragraphs replaced per version")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--config", default=str(ROOT / "wrangler.toml"), help="wrangler.toml to use")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.runtime.dev import DevStack, free_port

    with tempfile.TemporaryDirectory(prefix="edgeindex-history-") as state:
        environ = {"EDGEINDEX_STATE_DIR": state,
                   **{f"EDGEINDEX_{n.upper()}_PORT": str(free_port()) for n in ("upload", "ingest", "search")}}
        config = config_module.load(args.config, environ={**os.environ, **environ})
        admin_key = "bench-" + secrets.token_urlsafe(16)
        with open(Path(state) / "workers.log", "w") as log:
            stack = DevStack(config, worker_output=log, environ={**os.environ, **environ,
                                                                 "EDGEINDEX_ADMIN_KEY": admin_key},
                             workers=["upload", "ingest", "search"])
            stack.SNAPSHOT_SECONDS = 24 * 3600
            print(f"starting a dev stack in {state} ...", flush=True)
            stack.start()
            try:
                result = asyncio.run(run(stack.url("upload"), stack.url("search"), admin_key, stack.dsn, args))
            finally:
                stack.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
