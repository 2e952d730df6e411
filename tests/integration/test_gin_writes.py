"""Chunk writes leave no GIN entries pending (migration 0022): every search scans the chunks'
full-text index, and a typo's stand-ins the vocabulary's trigram index, so entries left in a
pending list (Postgres's default `fastupdate`) would be read whole by every search until a vacuum
merged them: 4,000 pending chunks make searches ~1.4x slower.

The writes go into a database of this module's own with autovacuum off (tests/helpers.py), so
nothing merges a pending list behind the test's back: what is pending after the write is what the
write left."""

from __future__ import annotations

import pytest
from edgeindex.evaluation import loader

from ..helpers import database_of_its_own

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = [f"Invoice {n} for the quarterly maintenance of pump station {n % 7}, signed by the board's treasurer"
         for n in range(60)] + [f"Rotate the on-call schedule {n} weeks before the audit; certificate ZX-{n}"
                                for n in range(60)]


@pytest.fixture(scope="module")
async def db(stack):
    async with database_of_its_own(stack, "gin_writes") as database:
        await database.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        yield database


async def _gin_indexes(db, table: str) -> list[dict]:
    """The GIN indexes of ``table``'s partitions that hold entries, with their pending entries."""
    return await db.fetch(
        "SELECT c.relname AS name, s.pending_tuples AS pending, s.pending_pages AS pages "
        "FROM pg_class c JOIN pg_am a ON a.oid = c.relam JOIN pg_index i ON i.indexrelid = c.oid "
        "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_inherits h ON h.inhrelid = t.oid "
        "CROSS JOIN LATERAL pgstatginindex(c.oid) s "
        "WHERE a.amname = 'gin' AND c.relkind = 'i' AND h.inhparent = %(table)s::regclass AND t.reltuples <> 0 "
        "ORDER BY c.relname", {"table": table})


async def test_chunk_writes_leave_no_gin_entries_pending_for_searches_to_scan(db):
    for n, entity in enumerate(("gin-writes-a", "gin-writes-b", "gin-writes-c")):
        # three tenants (three partitions, most likely), each written in several groups, as ingestion does
        await loader.load_synthetic(db, entity, TEXTS, 300, model_id=MODEL, dimension=384, seed=n,
                                    batch_documents=10)
    written = await db.fetch("SELECT tableoid::regclass::text AS part, count(*) AS n FROM chunks GROUP BY 1")
    assert sum(row["n"] for row in written) == 900
    await db.execute("ANALYZE chunks")
    await db.execute("ANALYZE term_stats")
    for table, kinds in (("chunks", "_tsv_idx"), ("term_stats", "_term_idx")):
        indexes = await _gin_indexes(db, table)
        # one full-text (chunks) or vocabulary-trigram (term_stats) index per partition written to
        assert {row["name"].removesuffix(kinds) for row in indexes} == {
            row["part"].replace("chunks", table) for row in written}, indexes
        assert [row for row in indexes if row["pending"] or row["pages"]] == [], indexes


async def test_chunks_keep_no_trigram_index_over_their_contents(db):
    """No statement reads one (fuzzy matching goes through the vocabulary's terms: migration 0003),
    and it was the costliest index a chunk write kept: every trigram of the chunk's text."""
    definitions = [row["indexdef"] for row in await db.fetch(
        "SELECT indexdef FROM pg_indexes WHERE tablename LIKE 'chunks%%'")]
    assert any("USING gin (tsv)" in d for d in definitions), definitions
    assert [d for d in definitions if "gin_trgm_ops" in d] == []
