"""Concurrent writes to one document end in one clear outcome (issue 11, item 10).

Each race is driven, not slept into: one writer is stopped at a named hold point
(``edgeindex.holds``: an advisory lock this test holds and the worker waits on) while the
other completes, then let go. Whatever the order, afterwards there is never a ready version
without chunks, a chunk or object or artifact of a deleted document, a version stuck
pending, or a cached answer holding what is gone; the writer that lost is told why.
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

from edgeindex.bindings import aws
from edgeindex.holds import Hold
from edgeindex.object_keys import artifacts_prefix, document_objects_prefix, run_prefix

from ..helpers import Client, chunks, paragraph, put_document, wait_document, wait_for

V1 = "\n\n".join(paragraph(t, word="feed") for t in ("lagoons", "estuaries"))
V2 = "\n\n".join(paragraph(t, word="drain") for t in ("glaciers", "moraines"))
V3 = "\n\n".join(paragraph(t, word="carve") for t in ("canyons", "mesas"))


def _path(tenant, document_id: str) -> str:
    return f"/entities/{tenant.entity_id}/documents/{quote(document_id, safe='')}"


def _put(tenant, document_id: str, text: str):
    return tenant.upload.put(_path(tenant, document_id), raw=text.encode(), headers={"Content-Type": "text/plain"})


def _bucket_keys(stack, prefix: str) -> list[str]:
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region="us-east-1", access_key_id="edgeindex",
                    secret_access_key="edgeindex")
    return [o["Key"] for o in s3.list_objects_v2(Bucket="edgeindex-documents", Prefix=prefix).get("Contents", [])]


def _leftovers(stack, tenant, document_id: str) -> list[str]:
    return (_bucket_keys(stack, document_objects_prefix(tenant.entity_id, document_id))
            + _bucket_keys(stack, artifacts_prefix(tenant.entity_id, document_id)))


async def _settled(stack, tenant, document_id: str, version: int) -> dict:
    """How the ingest worker settled the (last) message about ``version``, once it did."""
    admin = Client(stack.url("ingest"), stack.admin_key)

    def last():
        status, body = admin.get(f"/outcomes?entity_id={tenant.entity_id}&document_id={quote(document_id, safe='')}")
        assert status == 200, body
        mine = [o for o in body["outcomes"] if o["version"] == version]
        return mine[-1] if mine else None

    return await wait_for(lambda: asyncio.to_thread(last), timeout=120)


async def _runs(db, tenant, document_id: str) -> list[dict]:
    return await db.fetch("SELECT id, status FROM workflow_runs WHERE starts_with(id, %s)",
                          (run_prefix(tenant.entity_id, document_id),))


async def _nothing_left(stack, tenant, db, document_id: str) -> None:
    status, body = await asyncio.to_thread(tenant.upload.get, _path(tenant, document_id))
    assert status == 404, body
    assert await chunks(db, tenant.entity_id, document_id) == []
    assert await _runs(db, tenant, document_id) == []
    assert await asyncio.to_thread(_leftovers, stack, tenant, document_id) == []


async def test_a_put_that_a_delete_overtakes_is_refused_and_leaves_nothing(stack, tenant, db):
    doc = "races/put-then-delete.txt"
    put_document(tenant, quote(doc, safe=""), V1)
    assert (await wait_document(tenant, quote(doc, safe="")))["status"] == "ready"
    async with Hold(db, "upload:stored-version", tenant.entity_id, doc) as hold:
        put = asyncio.ensure_future(asyncio.to_thread(_put, tenant, doc, V2))
        await hold.reached()  # version 2's row exists; its bytes are not stored yet
        status, body = await asyncio.to_thread(tenant.upload.delete, _path(tenant, doc))
        assert status == 200 and body["deleted"], body
    status, body = await put
    # One clear outcome: the document is deleted, and the late version says so (not a 404 of a
    # version it had just created, not a 202 for bytes nobody will ingest).
    assert status == 409, body
    assert body["field"] == "document_id" and "was deleted while version 2 was being uploaded" in body["message"]
    await _nothing_left(stack, tenant, db, doc)
    outcome = await _settled(stack, tenant, doc, 2)  # its object-created event came all the same
    assert (outcome["action"], outcome["reason"]) == ("ack", "document deleted")
    await _nothing_left(stack, tenant, db, doc)


async def test_a_version_stored_while_a_delete_runs_goes_with_the_document(stack, tenant, db):
    doc = "races-delete-then-put"
    put_document(tenant, doc, V1)
    assert (await wait_document(tenant, doc))["status"] == "ready"
    async with Hold(db, "ingest:event", tenant.entity_id, doc) as ingest_hold:
        async with Hold(db, "delete:rows", tenant.entity_id, doc) as delete_hold:
            delete = asyncio.ensure_future(asyncio.to_thread(tenant.upload.delete, _path(tenant, doc)))
            await delete_hold.reached()  # the objects it listed are gone; the rows are not yet
            status, body = await asyncio.to_thread(_put, tenant, doc, V2)
            assert status == 202 and body["version"] == 2, body  # stored and confirmed before the rows go
            await ingest_hold.reached()  # its event is in the ingest worker's hands
        status, body = await delete
        assert status == 200 and body["deleted"], body
        # The DELETE came after the PUT was acknowledged: the document, version 2 included, is gone,
        # and so is the object version 2 stored after the DELETE had listed the document's objects.
        await _nothing_left(stack, tenant, db, doc)
    outcome = await _settled(stack, tenant, doc, 2)
    assert (outcome["action"], outcome["reason"]) == ("ack", "document deleted")
    await _nothing_left(stack, tenant, db, doc)


async def test_a_delete_before_ingestion_of_a_queued_version_starts(stack, tenant, db):
    doc = "races-queued"
    async with Hold(db, "ingest:event", tenant.entity_id, doc) as hold:
        assert put_document(tenant, doc, V1)["version"] == 1
        await hold.reached()  # the message is delivered, not yet looked at
        status, body = await asyncio.to_thread(tenant.upload.delete, _path(tenant, doc))
        assert status == 200, body
    outcome = await _settled(stack, tenant, doc, 1)
    assert (outcome["action"], outcome["reason"]) == ("ack", "document deleted")
    await _nothing_left(stack, tenant, db, doc)


async def test_a_delete_while_a_version_is_being_ingested(stack, tenant, db):
    doc = "races-mid-run"
    put_document(tenant, doc, V1)
    assert (await wait_document(tenant, doc))["status"] == "ready"
    query = {"query": "lagoons feed the land", "entity_ids": [tenant.entity_id], "k": 5, "cache": True}
    for _ in range(2):  # the second answer comes from the cache
        status, found = await asyncio.to_thread(tenant.search.post, "/search", query)
        assert status == 200 and {r["document_id"] for r in found["results"]} == {doc}, found
    assert found["cache"] == "exact"
    async with Hold(db, "ingest:upsert", tenant.entity_id, doc) as hold:
        assert put_document(tenant, doc, V2)["version"] == 2
        await hold.reached()  # version 2 is extracted, chunked, diffed, embedded and summarized
        status, body = await asyncio.to_thread(tenant.upload.delete, _path(tenant, doc))
        assert status == 200 and body["chunks_deleted"] == 2, body
        status, found = await asyncio.to_thread(tenant.search.post, "/search", query)
        assert status == 200 and found["results"] == [], found  # no cached answer holds the deleted chunks
    outcome = await _settled(stack, tenant, doc, 2)
    # The run's commit found the document gone and wrote nothing; its artifacts went with it.
    assert (outcome["action"], outcome["reason"]) == ("ack", "document deleted during ingestion")
    await _nothing_left(stack, tenant, db, doc)
    status, found = await asyncio.to_thread(tenant.search.post, "/search", {**query, "query": "glaciers drain"})
    assert status == 200 and found["results"] == [], found


async def test_two_puts_racing_the_later_version_wins_and_the_other_is_told(stack, tenant, db):
    doc = "races-two-puts"
    put_document(tenant, doc, V1)
    assert (await wait_document(tenant, doc))["status"] == "ready"
    async with Hold(db, "upload:stored-version", tenant.entity_id, doc) as hold:
        first = asyncio.ensure_future(asyncio.to_thread(_put, tenant, doc, V2))
        await hold.reached()  # version 2 numbered, its bytes not stored
        # the hold is per document and point: the second PUT passes it only after the first is let go,
        # so it is numbered now and stores its bytes once released, after the first
        second = asyncio.ensure_future(asyncio.to_thread(_put, tenant, doc, V3))
        await wait_for(lambda: db.fetchone("SELECT 1 FROM documents WHERE entity_id = %s AND id = %s "
                                           "AND version = 3", (tenant.entity_id, doc)), timeout=30)
    status, body = await first
    assert status == 409, body
    assert body["field"] == "document_id" and "was replaced by version 3" in body["message"], body
    status, body = await second
    assert status == 202 and body["version"] == 3, body
    ready = await wait_document(tenant, doc, version=3)
    assert (ready["status"], ready["version"], ready["ready_version"]) == ("ready", 3, 3), ready
    stored = await chunks(db, tenant.entity_id, doc)
    assert [c["content"] for c in stored] == V3.split("\n\n")
    assert {c["version"] for c in stored} == {3}
    outcome = await _settled(stack, tenant, doc, 2)
    assert outcome["action"] == "ack" and outcome["reason"] in ("superseded by version 3",), outcome
    # version 2's bytes were removed by their PUT; version 1's go in version 3's clean-up step
    def one_object():
        found = _bucket_keys(stack, document_objects_prefix(tenant.entity_id, doc))
        return found if len(found) == 1 else None

    keys = await wait_for(lambda: asyncio.to_thread(one_object), timeout=60)
    assert "/v3-" in keys[0], keys


async def test_a_version_being_ingested_loses_to_a_newer_upload(stack, tenant, db):
    doc = "races-ingest-vs-put"
    put_document(tenant, doc, V1)
    assert (await wait_document(tenant, doc))["status"] == "ready"
    async with Hold(db, "ingest:upsert", tenant.entity_id, doc) as hold:
        assert put_document(tenant, doc, V2)["version"] == 2
        await hold.reached()  # version 2's run waits at its commit
        assert put_document(tenant, doc, V3)["version"] == 3
    ready = await wait_document(tenant, doc, version=3)
    assert (ready["status"], ready["ready_version"], ready["error"]) == ("ready", 3, None), ready
    outcome = await _settled(stack, tenant, doc, 2)
    assert (outcome["action"], outcome["reason"]) == ("ack", "superseded"), outcome
    stored = await chunks(db, tenant.entity_id, doc)
    assert [c["content"] for c in stored] == V3.split("\n\n") and {c["version"] for c in stored} == {3}
    await wait_for(lambda: asyncio.to_thread(
        lambda: len(_bucket_keys(stack, document_objects_prefix(tenant.entity_id, doc))) == 1), timeout=60)
