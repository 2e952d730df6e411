"""The ingest worker over the real stack: re-ingesting only what changed, poison documents, supersession."""

from __future__ import annotations

import asyncio
import json
import random
import urllib.request

import pytest
from edgeindex import cache
from edgeindex.bindings import aws
from edgeindex.bindings.kv import DiskKV
from edgeindex.errors import ValidationError
from edgeindex.ingest.events import object_created, object_refs
from edgeindex.object_keys import document_objects_prefix, object_key, run_prefix

from ..helpers import (
    TOPICS,
    Client,
    chunks,
    document,
    generation,
    make_pdf,
    paragraph,
    put_document,
    wait_document,
    wait_for,
)


def objects(stack, entity_id: str, document_id: str) -> list[str]:
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region="us-east-1", access_key_id="edgeindex",
                    secret_access_key="edgeindex")
    listed = s3.list_objects_v2(Bucket="edgeindex-documents", Prefix=document_objects_prefix(entity_id, document_id))
    return [o["Key"] for o in listed.get("Contents", [])]


async def run_complete(db, entity_id: str, document_id: str) -> None:
    """Ready comes at the commit; the run's clean-up step follows."""
    await wait_for(lambda: db.fetchone("SELECT 1 FROM documents d JOIN workflow_runs r ON r.id = d.run_id "
                                       "WHERE d.entity_id = %s AND d.id = %s AND r.status = 'complete'",
                                       (entity_id, document_id)))


async def test_reupload_embeds_only_changed_chunks(stack, tenant, db):
    v1 = [paragraph(t) for t in TOPICS]
    put_document(tenant, "evolving", document(v1))
    doc = await wait_document(tenant, "evolving")
    assert (doc["status"], doc["chunk_count"], doc["chunks_embedded"], doc["chunks_reused"]) == ("ready", 5, 5, 0)
    first = await chunks(db, tenant.entity_id, "evolving")
    assert [c["content"] for c in first] == v1

    kv = DiskKV(stack.config.state_path / "kv", namespace="cache")
    try:
        seq = cache.read_sequences(kv, [tenant.entity_id])
        holder = f"reupload-{tenant.entity_id}"
        assert cache.store(kv, holder, {"ids": [first[0]["id"]]}, chunk_ids=[first[0]["id"]],
                           entity_ids=[tenant.entity_id], sequences=seq, ttl=600)

        # v2: the third paragraph is rewritten (and grows): one chunk embedded, four reused.
        v2 = v1[:2] + [paragraph("forests", 8, word="cover")] + v1[3:]
        put_document(tenant, "evolving", document(v2))
        doc = await wait_document(tenant, "evolving", version=2)
        assert (doc["status"], doc["chunk_count"], doc["chunks_embedded"], doc["chunks_reused"]) == ("ready", 5, 1, 4)
        # A cached result holding a chunk of the old version is gone, even one whose chunk was reused.
        assert kv.get(cache.result_key(holder)) is None  # dropped through the reverse map, not just retired
        assert cache.load(kv, holder, seq) is None
    finally:
        kv.close()
    second = await chunks(db, tenant.entity_id, "evolving")
    assert [c["content"] for c in second] == v2
    assert [c["id"] for c in second][:2] == [c["id"] for c in first][:2]      # same rows, same vectors
    assert [c["id"] for c in second][3:] == [c["id"] for c in first][3:]      # moved: new offsets only
    assert second[3]["start_char"] > first[3]["start_char"] and second[3]["version"] == 1
    assert second[2]["id"] != first[2]["id"] and second[2]["version"] == 2
    assert first[2]["id"] not in {c["id"] for c in second}                     # the stale row is deleted
    await run_complete(db, tenant.entity_id, "evolving")
    assert objects(stack, tenant.entity_id, "evolving") == [
        object_key(tenant.entity_id, "evolving", 2, "evolving", await generation(db, tenant.entity_id, "evolving"))]

    # v3: a new paragraph first, the last one removed: one embedded, the other four reused and moved.
    v3 = [paragraph("glaciers")] + v2[:4]
    put_document(tenant, "evolving", document(v3))
    doc = await wait_document(tenant, "evolving", version=3)
    assert (doc["chunk_count"], doc["chunks_embedded"], doc["chunks_reused"]) == (5, 1, 4)
    third = await chunks(db, tenant.entity_id, "evolving")
    assert [c["content"] for c in third] == v3
    assert [c["id"] for c in third][1:] == [c["id"] for c in second][:4]

    # Same bytes again: nothing to chunk or embed, the live chunks stand for version 4.
    # (skip_unchanged=false: a forced version; by default the upload worker would create none)
    status, _ = tenant.upload.put(f"/entities/{tenant.entity_id}/documents/evolving?skip_unchanged=false&title=Renamed",
                                  raw=document(v3).encode(), headers={"Content-Type": "text/plain"})
    assert status == 202
    doc = await wait_document(tenant, "evolving", version=4)
    assert (doc["chunk_count"], doc["chunks_embedded"], doc["chunks_reused"]) == (5, 0, 5)
    assert (doc["ready_version"], doc["title"]) == (4, "Renamed")
    assert [c["id"] for c in await chunks(db, tenant.entity_id, "evolving")] == [c["id"] for c in third]
    run_id = (await db.fetchone("SELECT run_id FROM documents WHERE entity_id = %s AND id = 'evolving'",
                                (tenant.entity_id,)))["run_id"]
    await run_complete(db, tenant.entity_id, "evolving")
    steps = await db.fetch("SELECT name FROM workflow_steps WHERE run_id = %s ORDER BY seq", (run_id,))
    assert [s["name"] for s in steps] == ["extract", "upsert", "delete-stale"]


async def test_poison_documents_fail_with_a_reason_and_spare_the_batch(stack, tenant, db):
    # Uploaded back to back, so the queue hands them to the worker in one batch.
    status, empty = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads",
                                       {"document_id": "p-empty", "content_type": "text/plain", "size_bytes": 0})
    assert status == 201
    req = urllib.request.Request(empty["upload"]["url"], data=b"", method="PUT", headers=empty["upload"]["headers"])
    urllib.request.urlopen(req, timeout=30).close()
    put_document(tenant, "p-pdf", b"%PDF-1.7\n1 0 obj << /Broken >>\nthis is not a PDF body",
                 content_type="application/pdf")
    put_document(tenant, "p-binary", bytes([0, 159, 146, 150]) + random.Random(1).randbytes(2000))
    put_document(tenant, "p-latin1", "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.".encode("latin-1"))
    put_document(tenant, "p-good", "A healthy document in the same batch as the broken ones.")
    put_document(tenant, "p-json", b'{"title": "cut', content_type="application/json")

    expected = {
        "p-empty": "the file is empty",
        "p-pdf": "the PDF could not be parsed",
        "p-binary": "binary data",
        "p-latin1": "not valid UTF-8 text (byte 0xe9 at offset 3)",
        "p-json": "not valid JSON",
    }
    for document_id, reason in expected.items():
        doc = await wait_document(tenant, document_id)
        assert doc["status"] == "failed", doc
        assert reason in doc["error"] and doc["step"] == "extract"
        assert doc["chunk_count"] == 0
    good = await wait_document(tenant, "p-good")
    assert good["status"] == "ready" and good["chunk_count"] == 1
    rows = await db.fetch("SELECT status, error FROM workflow_runs WHERE starts_with(id, %s)",
                          (run_prefix(tenant.entity_id, "p-pdf"),))
    assert rows[0]["status"] == "errored" and "PDF" in rows[0]["error"]

    # A failed document is fixed by uploading it again.
    put_document(tenant, "p-latin1", "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.")
    doc = await wait_document(tenant, "p-latin1", version=2)
    assert doc["status"] == "ready" and doc["error"] is None
    await run_complete(db, tenant.entity_id, "p-latin1")  # the failed version's object goes too
    assert objects(stack, tenant.entity_id, "p-latin1") == [
        object_key(tenant.entity_id, "p-latin1", 2, "p-latin1", await generation(db, tenant.entity_id, "p-latin1"))]


async def test_pdf_and_json_documents(tenant, db):
    pdf = make_pdf([["Quarterly report on edge search.", "Latency fell by half."], ["Appendix: methods."]],
                   title="Q3 report")
    put_document(tenant, "report", pdf, content_type="application/pdf")
    put_document(tenant, "config", json.dumps({"service": "search", "regions": ["eu", "us"]}),
                 content_type="application/json")
    doc = await wait_document(tenant, "report")
    assert doc["status"] == "ready" and doc["title"] == "Q3 report"
    text = " ".join(c["content"] for c in await chunks(db, tenant.entity_id, "report"))
    assert "Latency fell by half." in text and "Appendix: methods." in text
    doc = await wait_document(tenant, "config")
    assert doc["status"] == "ready"
    assert [c["content"] for c in await chunks(db, tenant.entity_id, "config")] == [
        "service: search\nregions[0]: eu\nregions[1]: us"]


async def test_superseded_version_is_skipped(stack, tenant, db):
    put_document(tenant, "racy", "First version, replaced before anyone ingests it.")
    put_document(tenant, "racy", "Second version, the one that counts.")
    doc = await wait_document(tenant, "racy", version=2)
    assert (doc["status"], doc["version"], doc["ready_version"]) == ("ready", 2, 2)
    rows = await chunks(db, tenant.entity_id, "racy")
    assert [c["content"] for c in rows] == ["Second version, the one that counts."]
    # Version 1's message was acked without a run; the ingest worker says how it settled each message.
    admin = Client(stack.url("ingest"), stack.admin_key)

    def settled():
        status, answer = admin.get(f"/outcomes?entity_id={tenant.entity_id}&document_id=racy")
        return answer["outcomes"] if status == 200 and len(answer["outcomes"]) >= 2 else None

    outcomes = await wait_for(lambda: asyncio.to_thread(settled), timeout=60)
    assert {(o["version"], o["action"], o["reason"]) for o in outcomes} == {
        (1, "ack", "superseded by version 2"), (2, "ack", "ready")}


async def test_skip_unchanged_upload_keeps_the_live_version(stack, tenant, db):
    text = document([paragraph(t) for t in TOPICS[:2]])
    put_document(tenant, "synced", text, title="Old title")
    await wait_document(tenant, "synced")
    ids = [c["id"] for c in await chunks(db, tenant.entity_id, "synced")]
    kv = DiskKV(stack.config.state_path / "kv", namespace="cache")
    try:
        seq = cache.read_sequences(kv, [tenant.entity_id])
        holder = f"synced-{tenant.entity_id}"
        assert cache.store(kv, holder, {"ids": ids}, chunk_ids=ids, entity_ids=[tenant.entity_id], sequences=seq,
                           ttl=600)
        path = f"/entities/{tenant.entity_id}/documents/synced?skip_unchanged=true"
        status, doc = tenant.upload.put(path, raw=text.encode(), headers={"Content-Type": "text/plain"})
        assert status == 200 and doc["unchanged"] is True and doc["version"] == 1
        assert cache.load(kv, holder, cache.read_sequences(kv, [tenant.entity_id])) == {"ids": ids}  # nothing changed

        status, doc = tenant.upload.put(path + "&title=New%20title", raw=text.encode(),
                                        headers={"Content-Type": "text/plain"})
        assert (status, doc["version"], doc["title"], doc["status"]) == (200, 1, "New title", "ready")
        assert kv.get(cache.result_key(holder)) is None  # cached results showed the old title
    finally:
        kv.close()
    assert [c["id"] for c in await chunks(db, tenant.entity_id, "synced")] == ids

    changed = text + "\n\n" + paragraph("oceans")
    status, doc = tenant.upload.put(path, raw=changed.encode(), headers={"Content-Type": "text/plain"})
    assert status == 202 and doc["version"] == 2  # different bytes: a new version as always
    doc = await wait_document(tenant, "synced", version=2)
    assert (doc["chunks_embedded"], doc["chunks_reused"]) == (1, 2)


def test_s3_events_name_documents_and_versions():
    key = "docs/team%3Aa/report-1/v3/q3+results.pdf"  # as S3 sends it: URL-encoded, spaces as '+'
    body = {"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": {"key": key, "size": 1234}}},
                        {"eventName": "ObjectRemoved:Delete", "s3": {"object": {"key": key}}},
                        {"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "artifacts/x/y/v1-a/text.txt"}}}]}
    [ref] = object_refs(body)
    assert (ref.entity_id, ref.document_id, ref.version, ref.size) == ("team:a", "report-1", 3, 1234)
    assert ref.key == "docs/team:a/report-1/v3/q3 results.pdf"
    assert object_refs({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"}) == []
    with pytest.raises(ValidationError):
        object_refs({"hello": "world"})
    with pytest.raises(ValidationError):
        object_refs({"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "docs/e/d/1/f"}}}]})
    # What recovery re-sends reads back the same.
    [again] = object_refs(object_created("bucket", "docs/team:a/report-1/v3/q3 results.pdf", size=1234))
    assert again == ref
