"""EXPLAIN of the search statements, and which kind of index each executed scan used.

Used by ``scripts/explain_search.py`` (50k chunks) and a smaller test, to show the
plan really filters first and reaches the HNSW and GIN indexes, with real table
sizes and statistics rather than planner switches.
"""

from __future__ import annotations

import re

import numpy as np

from .. import sqlfiles
from ..bindings.database import Database
from ..models.backfill import serving_model
from ..search import engine
from ..search.request import SearchRequest

SQL = sqlfiles.load("benchmark.sql")
_VECTOR_LITERAL = re.compile(r"'\[[-0-9.e, ]{40,}\]'")
_SCAN = re.compile(r"(?:Bitmap Index Scan on|Index Scan(?: Backward)? using|Index Only Scan using) (\S+)")


async def explain(db: Database, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                  analyze: bool = True) -> list[str]:
    """Plan lines of the two search statements for this request (vector literals shortened):
    ``lexical``, then ``hybrid`` given what ``lexical`` returned."""
    tuned = engine.tuned_connections()  # a fresh set: every connection is tuned before use
    limit = request.k
    model_id, _ = await serving_model(db)
    lexical = await engine.lexical(db, request, entity_ids, tuned=tuned, limit=limit)
    options = "ANALYZE, BUFFERS" if analyze else "COSTS"
    lines = []
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        for name, params in (
                ("lexical", engine.build_params(request, entity_ids, None, limit=limit)),
                ("hybrid", engine.build_params(request, entity_ids, embedding, limit=limit, model_id=model_id,
                                               lexical=lexical))):
            lines.extend(await _plan(conn, name, params, options))
        await conn.rollback()
    return lines


async def explain_one(db: Database, request: SearchRequest, entity_ids: list[str], embedding: np.ndarray, *,
                      analyze: bool = True) -> list[str]:
    """Plan lines of the one-statement search (``engine.SEARCH``: both halves) for this request."""
    tuned = engine.tuned_connections()
    options = "ANALYZE, BUFFERS" if analyze else "COSTS"
    params = engine.build_params(request, entity_ids, embedding, limit=request.k,
                                 model_id=(await serving_model(db))[0])
    async with db.connection() as conn:
        await engine.tune_connection(conn, tuned)
        lines = await _plan(conn, "search", params, options)
        await conn.rollback()
    return lines


async def _plan(conn, name: str, params: dict, options: str) -> list[str]:
    """EXPLAIN of the text a search runs for ``name`` with these parameters (``engine.statement``:
    without the parts they leave idle), vector literals shortened."""
    run = engine.statement(name, params)
    rows = await engine.execute(conn, engine.Statement(f"EXPLAIN ({options}) {run.text}", run.names), params)
    return [f"-- statement: {name}"] + [_VECTOR_LITERAL.sub("'[...]'", row["QUERY PLAN"]) for row in rows]


async def index_kinds(db: Database) -> dict[str, str]:
    """Index name → ``hnsw`` / ``fts_gin`` / ``trigram_gin`` / ``btree`` / ``gin``, for the chunks,
    term statistics and documents tables."""
    kinds = {}
    for row in await db.fetch(SQL["explain_indexes"]):
        definition = row["indexdef"]
        if "USING hnsw" in definition:
            kinds[row["indexname"]] = "hnsw"
        elif "gin_trgm_ops" in definition:
            kinds[row["indexname"]] = "trigram_gin"
        elif "USING gin (tsv)" in definition:
            kinds[row["indexname"]] = "fts_gin"
        elif "USING gin" in definition:
            kinds[row["indexname"]] = "gin"
        else:
            kinds[row["indexname"]] = "btree"
    return kinds


def executed_index_scans(plan: list[str]) -> list[str]:
    """Index names of the scans that ran (an EXPLAIN ANALYZE line not marked "never executed")."""
    return [m.group(1) for line in plan if "never executed" not in line and (m := _SCAN.search(line))]


async def vacuum_analyze(db: Database) -> None:
    """What autovacuum does after a bulk load: statistics, and GIN pending lists merged.

    Right after a bulk insert the GIN indexes hold new entries in their pending lists
    (fastupdate), which the planner rightly prices high: plans then scan instead of
    using them until autovacuum gets there. Plans are judged as they settle.
    """
    async with db.connection() as conn:
        await conn.set_autocommit(True)
        try:
            for table in ("documents", "chunks", "term_stats", "entity_stats"):
                await conn.execute(f"VACUUM (ANALYZE) {table}")
        finally:
            await conn.set_autocommit(False)


async def rebuild_hnsw(db: Database, *, drop: bool) -> None:
    """Drop the HNSW index before a bulk load (``drop=True``) or build it after, with room to work."""
    async with db.connection() as conn:
        await conn.set_autocommit(True)
        try:
            if drop:
                await conn.execute(SQL["explain_drop_hnsw"])
            else:
                await conn.execute("SET maintenance_work_mem = '1GB'")
                await conn.execute("SET max_parallel_maintenance_workers = 2")
                row = await (await conn.execute("SELECT dimension FROM embedding_model")).fetchone()
                await conn.execute(SQL["explain_create_hnsw"].replace("{{dimension}}", str(int(row["dimension"]))))
                await conn.execute("RESET maintenance_work_mem")
                await conn.execute("RESET max_parallel_maintenance_workers")
        finally:
            await conn.set_autocommit(False)


def used_kinds(plan: list[str], kinds: dict[str, str]) -> set[str]:
    return {kinds.get(name, "other") for name in executed_index_scans(plan)}
