"""What the nineteenth session's labs share: an embedded Postgres of their own in a temp folder, migrated
as the workers migrate it, and load_search.py's MS MARCO queries with random unit vectors (the chunks'
vectors are random too, so the HNSW walk is what a real one costs, not what it finds)."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

import load_search  # noqa: E402


@contextlib.contextmanager
def embedded_postgres(prefix: str, *, autovacuum: bool = True) -> Iterator[str]:
    """The DSN of a fresh embedded Postgres, stopped and deleted afterwards."""
    import psycopg
    from edgeindex.runtime.dev import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        postgres = EmbeddedPostgres(Path(folder) / "pgdata")
        dsn = postgres.start()
        try:
            if not autovacuum:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute("ALTER SYSTEM SET autovacuum = off")
                    conn.execute("SELECT pg_reload_conf()")
            yield dsn
        finally:
            postgres.stop()


async def migrated_database(dsn: str, *, max_size: int = 2):
    """An open ``Database`` on ``dsn``, with every migration applied (the caller closes it)."""
    from edgeindex.bindings.database import Database

    db = Database(dsn, max_size=max_size)
    await db.migrate(ROOT / "infra" / "migrations", model_id=load_search.MODEL_ID, dimension=load_search.DIMENSION)
    await db.open()
    return db


def queries(limit: int | None = None) -> tuple[list[str], list]:
    """load_search.py's query texts (the first ``limit``) and a random unit vector for each."""
    import numpy as np
    from edgeindex.evaluation.loader import random_unit_vectors

    texts = [json.loads(line)["text"] for line in open(load_search.DATA / "queries.jsonl", encoding="utf-8")][:limit]
    return texts, random_unit_vectors(np.random.default_rng(7), len(texts), load_search.DIMENSION)
