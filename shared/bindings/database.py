"""Database binding (Hyperdrive-like): a psycopg 3 async pool with pgvector registered.

Migrations are versioned ``NNNN_name.sql`` files under ``infra/migrations``,
applied in order under an advisory lock so concurrent workers starting together
do not race; applying them again does nothing.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from ..errors import BindingError, ModelMismatchError
from ..sqlfiles import load

# what every connection of the pools is: rows as dicts (the pools' row factory)
Connection = psycopg.AsyncConnection[DictRow]

log = logging.getLogger(__name__)

# The one read of which model the chunks' vectors are of (models.sql, shared/models/).
SERVING_MODEL = load("models.sql")["serving_model"]
MIGRATION_LOCK = 7_420_001  # advisory lock id shared by every edgeindex process
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


STATEMENTS_CHECKSUM = "sql:"   # the prefix of Migration.checksum, which a whole-file checksum lacks


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    def render(self, dimension: int) -> str:
        return self.path.read_text(encoding="utf-8").replace("{{dimension}}", str(int(dimension)))

    def checksum(self) -> str:
        """Of the statements only (whole-line ``--`` comments, blank lines and trailing blanks left out),
        so a migration's comments can be reworded after it was applied without it counting as changed."""
        lines = (line.rstrip() for line in self.path.read_text(encoding="utf-8").splitlines())
        statements = "\n".join(line for line in lines if line and not line.lstrip().startswith("--"))
        return STATEMENTS_CHECKSUM + hashlib.sha256(statements.encode("utf-8")).hexdigest()


def migrations_folder() -> Path:
    """Where the packaged migrations are: ``infra/migrations`` in a checkout, ``edgeindex/migrations``
    in an installed wheel."""
    from .. import migrations

    return Path(migrations.__file__).parent


def discover(folder: Path) -> list[Migration]:
    found = []
    for path in sorted(folder.glob("*.sql")):
        match = _FILE.match(path.name)
        if not match:
            raise BindingError(f"{path}: migration files must be named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise BindingError(f"{folder}: two migrations share a version number")
    return found


async def _configure(conn: psycopg.AsyncConnection, plan_cache_mode: str = "force_custom_plan") -> None:
    try:
        await register_vector_async(conn)
    except psycopg.ProgrammingError:
        pass  # before the first migration the vector type does not exist yet
    # Custom plans keep "filter first" effective: a generic plan would not see
    # which optional filters are NULL for this query.
    await conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    await conn.execute("SET hnsw.iterative_scan = relaxed_order")
    await conn.commit()


async def _configure_generic(conn: psycopg.AsyncConnection) -> None:
    await _configure(conn, "force_generic_plan")


class Database:
    """Owns an AsyncConnectionPool (or borrows one it will not close)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10, name: str = "DB",
                 pool: AsyncConnectionPool | None = None) -> None:
        if not dsn and pool is None:
            raise BindingError("no database configured: set services.database.dsn (or EDGEINDEX_DATABASE_URL), "
                               "or run `edgeindex dev` for the embedded one")
        self.dsn = dsn
        self.name = name
        self._owns_pool = pool is None
        self.pool = pool or AsyncConnectionPool(dsn, min_size=min_size, max_size=max_size, open=False,
                                                configure=_configure, kwargs={"row_factory": dict_row})
        # Connections whose every statement is planned generically: for statements whose plan-shaping
        # values are written into their text (search/plan_reuse.py), so a generic plan is the custom
        # plan, made once per connection. Kept apart so that no other statement ever gets a generic
        # plan, without switching plan_cache_mode around each reused statement (two statements per
        # search). Empty until used (min_size 0): a process that runs no search opens none.
        self.generic_pool = AsyncConnectionPool(dsn or self.pool.conninfo, min_size=0, max_size=max_size,
                                                open=False, configure=_configure_generic,
                                                kwargs={"row_factory": dict_row})

    async def open(self) -> None:
        try:
            await self.pool.open(wait=True, timeout=30)
            await self.generic_pool.open(wait=True, timeout=30)
        except Exception as exc:
            raise BindingError(f"cannot connect to the database: {exc}") from exc

    async def close(self) -> None:
        await self.generic_pool.close()
        if self._owns_pool:
            await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        async with self.pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def generic_connection(self) -> AsyncIterator[Connection]:
        """A connection of ``generic_pool``: every statement on it gets a generic plan. Only for
        statements whose text already holds every value that can shape their plan."""
        async with self.generic_pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        async with self.pool.connection() as conn:
            async with conn.transaction():
                yield conn

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[Connection]:
        """A connection for one statement, in autocommit: the statement is its own transaction, as
        it would be between a BEGIN and a COMMIT, without their two round trips (a pipeline of
        statements up to its sync is one implicit transaction too)."""
        async with self.pool.connection() as conn:
            await conn.set_autocommit(True)
            try:
                yield conn
            finally:
                await conn.set_autocommit(False)

    async def fetch(self, sql: str, params: dict | tuple | None = None) -> list[dict]:
        async with self.autocommit() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def fetchone(self, sql: str, params: dict | tuple | None = None) -> dict | None:
        async with self.autocommit() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()

    async def execute(self, sql: str, params: dict | tuple | None = None) -> int:
        async with self.autocommit() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    async def migrate(self, folder: Path | None = None, *, model_id: str, dimension: int) -> list[int]:
        """Apply pending migrations and pin the embedding model; returns the versions applied."""
        migrations = discover(folder or migrations_folder())
        applied: list[int] = []
        # A dedicated connection: the pool's configure step may have run before
        # the vector extension existed.
        async with await psycopg.AsyncConnection.connect(self.dsn or self.pool.conninfo, autocommit=True,
                                                         row_factory=dict_row) as conn:
            await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                await conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())""")
                cur = await conn.execute("SELECT version, checksum FROM schema_migrations")
                done = {row["version"]: row["checksum"] for row in await cur.fetchall()}
                await _check_model(conn, model_id, dimension, schema_exists=bool(done))
                for migration in migrations:
                    if migration.version in done:
                        recorded = done[migration.version]
                        if not recorded.startswith(STATEMENTS_CHECKSUM):
                            # a whole-file checksum, comments included: nothing to compare the statements
                            # with, so the statements' checksum is recorded in its place
                            await conn.execute("UPDATE schema_migrations SET checksum = %s WHERE version = %s",
                                               (migration.checksum(), migration.version))
                        elif recorded != migration.checksum():
                            log.warning("migration %04d_%s changed after it was applied", migration.version,
                                        migration.name)
                        continue
                    async with conn.transaction():
                        await conn.execute(migration.render(dimension))
                        await conn.execute(
                            "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                            (migration.version, migration.name, migration.checksum()))
                    applied.append(migration.version)
                    log.info("applied migration %04d_%s", migration.version, migration.name)
                await conn.execute(
                    "INSERT INTO embedding_model (model_id, dimension) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (model_id, dimension))
                await _check_model(conn, model_id, dimension, schema_exists=True)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        return applied

    async def stored_model(self) -> tuple[str, int] | None:
        """(model id, dimension) of the serving model the database names, None before the first migration.

        On a connection of its own: before the first migration the pool cannot configure its
        connections (the vector extension does not exist yet)."""
        async with await psycopg.AsyncConnection.connect(self.dsn or self.pool.conninfo, autocommit=True,
                                                         row_factory=dict_row) as conn:
            return await _read_model(conn)

    async def serving_model(self) -> tuple[str, int] | None:
        """(model id, dimension) of the serving model, read on a pooled connection of a migrated database."""
        async with self.autocommit() as conn:
            return await _read_model(conn)

    def describe(self) -> dict:
        return {"type": "hyperdrive", "pool_max": self.pool.max_size}


async def _read_model(conn: Connection) -> tuple[str, int] | None:
    cur = await conn.execute("SELECT to_regclass('embedding_model') AS t")
    if (await cur.fetchone())["t"] is None:
        return None
    row = await (await conn.execute(SERVING_MODEL)).fetchone()
    return (row["model_id"], int(row["dimension"])) if row else None


async def _check_model(conn: Connection, model_id: str, dimension: int, *, schema_exists: bool) -> None:
    stored = await _read_model(conn) if schema_exists else None
    if stored and stored != (model_id, dimension):
        raise ModelMismatchError(
            f"the database holds vectors from model {stored[0]!r} (dimension {stored[1]}) "
            f"but the configured model is {model_id!r} (dimension {dimension}); "
            "vectors are never mixed: use a new database or re-index with the original model")
