"""Upserts of concurrent runs committed together (edgeindex.ingest.grouped): one transaction for the
group, term statistics kept exact, and a document whose write fails fails alone."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest
from edgeindex import copies
from edgeindex.bindings.kv import DiskKV
from edgeindex.history.retention import DEFAULT
from edgeindex.ingest.grouped import DocumentWrite, GroupedWriter
from edgeindex.token_count import count_tokens

from ..helpers import chunks, put_document, wait_document

DIMENSION = 384


async def ready_documents(tenant, n: int, prefix: str) -> list[dict]:
    for i in range(n):
        put_document(tenant, f"{prefix}-{i}", f"First text of note {i} about {prefix} harbours.")
    return [await wait_document(tenant, f"{prefix}-{i}", statuses=("ready",)) for i in range(n)]


async def rewrite(db, tenant, doc: dict, text: str, *, dimension: int = DIMENSION) -> DocumentWrite:
    """The write a rerun of the document's ready version would commit, with new content: one chunk."""
    row = (await db.fetch("SELECT generation::text AS generation, version FROM documents "
                          "WHERE entity_id = %s AND id = %s", (tenant.entity_id, doc["document_id"])))[0]
    [stored] = await chunks(db, tenant.entity_id, doc["document_id"])
    vector = np.full(dimension, 1 / np.sqrt(dimension), np.float32)
    return DocumentWrite(
        entity_id=tenant.entity_id, document_id=doc["document_id"], version=row["version"],
        generation=row["generation"], ids=[stored["id"]], embedded_ids={stored["id"]},
        rows=[(tenant.entity_id, uuid.UUID(stored["id"]), doc["document_id"], row["version"], 0, 0, len(text), text,
               "h" * 64, 8, "sentence-transformers/all-MiniLM-L6-v2", vector, "en", "english", None, None,
               *copies.signature(text), count_tokens(text))],
        moves=[], finish={"chunk_count": 1, "embedded": 1, "reused": 0, "summary": text,
                          "content_hash": "c" * 64, "size_bytes": len(text), "found_title": "", "etag": None})


async def term_stats_match_chunks(db, entity_id: str) -> None:
    """What the triggers keep equals what the chunks hold now."""
    kept = {r["term"]: r["df"] for r in await db.fetch(
        "SELECT term, df FROM term_stats WHERE entity_id = %s", (entity_id,))}
    counted = {r["term"]: r["df"] for r in await db.fetch(
        "SELECT t.term, count(*)::int AS df FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS t (term) "
        "WHERE c.entity_id = %s GROUP BY t.term", (entity_id,))}
    assert kept == counted


@pytest.fixture
def writer(db, tmp_path):
    return GroupedWriter(db, DiskKV(tmp_path / "kv", namespace="grouped-test"), retention=DEFAULT)


async def test_concurrent_upserts_share_one_commit_and_keep_term_statistics(db, tenant, writer):
    docs = await ready_documents(tenant, 3, "group")
    writes = [await rewrite(db, tenant, d, f"Rewritten note {i} mentions zeppelin{i} lighthouses.")
              for i, d in enumerate(docs)]
    results = await asyncio.gather(*(writer.commit(w) for w in writes))
    assert [r["outcome"] for r in results] == ["ready"] * 3
    assert (writer.commits, writer.documents, writer.isolated) == (1, 3, 0)
    for i, d in enumerate(docs):
        assert [c["content"] for c in await chunks(db, tenant.entity_id, d["document_id"])] == \
            [f"Rewritten note {i} mentions zeppelin{i} lighthouses."]
    await term_stats_match_chunks(db, tenant.entity_id)


async def test_a_failing_write_in_a_group_fails_alone(db, tenant, writer):
    docs = await ready_documents(tenant, 3, "bad")
    before = await chunks(db, tenant.entity_id, "bad-1")
    writes = [await rewrite(db, tenant, d, f"Second text of note {i}.", dimension=DIMENSION - 1 if i == 1 else DIMENSION)
              for i, d in enumerate(docs)]
    results = await asyncio.gather(*(writer.commit(w) for w in writes), return_exceptions=True)
    assert isinstance(results[1], Exception) and "dimensions" in str(results[1]), results[1]
    assert [results[0]["outcome"], results[2]["outcome"]] == ["ready", "ready"]
    assert writer.isolated == 1  # the shared commit failed and was redone one document at a time
    assert [c["content"] for c in await chunks(db, tenant.entity_id, "bad-0")] == ["Second text of note 0."]
    assert [c["content"] for c in await chunks(db, tenant.entity_id, "bad-2")] == ["Second text of note 2."]
    assert await chunks(db, tenant.entity_id, "bad-1") == before  # nothing of the failed write is kept
    await term_stats_match_chunks(db, tenant.entity_id)


async def test_a_superseded_document_in_a_group_writes_nothing(db, tenant, writer):
    docs = await ready_documents(tenant, 2, "gone")
    writes = [await rewrite(db, tenant, d, "Late text.") for d in docs]
    writes[0].version += 1  # a newer version was uploaded meanwhile
    results = await asyncio.gather(*(writer.commit(w) for w in writes))
    assert results[0] == {"outcome": "superseded", "current_version": 1}
    assert results[1]["outcome"] == "ready"
    assert [c["content"] for c in await chunks(db, tenant.entity_id, "gone-0")] != ["Late text."]
