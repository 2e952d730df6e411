"""The bulk route (``POST /entities/{entity_id}/documents``, NDJSON): good and bad documents in one
request, a result per line, each good one its own version ingested on its own; the SDK and CLI use it."""

from __future__ import annotations

import asyncio
import base64
import json

from edgeindex.holds import Hold

from ..helpers import TOPICS, chunks, document, paragraph, put_document, wait_document
from .test_write_races import _nothing_left

NDJSON = {"Content-Type": "application/x-ndjson"}


def ndjson(*lines) -> bytes:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines).encode() + b"\n"


async def test_bulk_route_reports_each_document_good_and_bad(stack, tenant, db):
    texts = {f"bulk-{i}": document([paragraph(t)]) for i, t in enumerate(TOPICS[:3])}
    body = ndjson(
        {"document_id": "bulk-0", "text": texts["bulk-0"], "title": "First", "tags": ["a", "b"]},
        {"document_id": "bulk-1", "text": texts["bulk-1"]},
        "{not json",
        {"document_id": "bulk-bad-type", "text": "x", "content_type": "image/png"},
        {"document_id": "", "text": "an empty id"},
        {"document_id": "bulk-both", "text": "x", "content_base64": "eA=="},
        {"document_id": "bulk-2", "content_base64": base64.b64encode(texts["bulk-2"].encode()).decode()},
        {"document_id": "bulk-dup", "text": "one"},
        {"document_id": "bulk-dup", "text": "two"},
        {"document_id": "bulk-extra", "text": "x", "colour": "red"},
    )
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/documents", raw=body, headers=NDJSON)
    assert status == 200, answer
    results = answer["results"]
    assert [r["line"] for r in results] == list(range(1, 11))
    assert [(r["document_id"], r["outcome"], r["status"]) for r in results] == [
        ("bulk-0", "accepted", 202), ("bulk-1", "accepted", 202), (None, "failed", 400),
        ("bulk-bad-type", "failed", 415), ("", "failed", 400), ("bulk-both", "failed", 400),
        ("bulk-2", "accepted", 202), ("bulk-dup", "failed", 400), ("bulk-dup", "failed", 400),
        ("bulk-extra", "failed", 400)]
    assert [r["error"]["field"] for r in results if r["outcome"] == "failed"] == [
        "body", "content_type", "document_id", "text", "document_id", "document_id", "colour"]
    assert (answer["accepted"], answer["unchanged"], answer["failed"]) == (3, 0, 7)

    for doc_id, text in texts.items():  # every good line is its own document, ingested
        doc = await wait_document(tenant, doc_id)
        assert (doc["status"], doc["version"]) == ("ready", 1)
        assert [c["content"] for c in await chunks(db, tenant.entity_id, doc_id)] == [text]
    status, first = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/bulk-0")
    assert (first["title"], first["tags"]) == ("First", ["a", "b"])
    for bad in ("bulk-bad-type", "bulk-both", "bulk-dup", "bulk-extra"):  # nothing stored for a bad line
        assert tenant.upload.get(f"/entities/{tenant.entity_id}/documents/{bad}")[0] == 404

    # The same bytes again: recognised before any version or workflow run; a changed one is a new version.
    again = ndjson({"document_id": "bulk-0", "text": texts["bulk-0"]},
                   {"document_id": "bulk-1", "text": texts["bulk-1"] + "\n\n" + paragraph("oceans")})
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/documents", raw=again, headers=NDJSON)
    assert status == 200, answer
    assert [(r["outcome"], r["version"]) for r in answer["results"]] == [("unchanged", 1), ("accepted", 2)]
    doc = await wait_document(tenant, "bulk-1", version=2)
    assert (doc["status"], doc["chunks_reused"], doc["chunks_embedded"]) == ("ready", 1, 1)


async def test_a_line_no_database_can_store_fails_alone_and_the_good_lines_are_stored(stack, tenant, db):
    nested_id: object = "deep"
    for _ in range(40):
        nested_id = [nested_id]
    body = ndjson(
        {"document_id": "bulk-good-1", "text": "a good line before the bad ones"},
        {"document_id": "nul\u0000id", "text": "x"},
        '{"document_id": "lone\\ud800surrogate", "text": "x"}',
        {"document_id": "bulk-nul-text", "text": "a\u0000b"},
        "[" * 100_000,
        {"document_id": nested_id, "text": "x"},
    ) + b"\xff\xfe not UTF-8\n" + ndjson({"document_id": "bulk-good-2", "text": "a good line after the bad ones"})
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/documents", raw=body, headers=NDJSON)
    assert status == 200, answer
    results = answer["results"]
    assert [(r["line"], r["outcome"], r["status"]) for r in results] == [
        (1, "accepted", 202), (2, "failed", 400), (3, "failed", 400), (4, "failed", 400), (5, "failed", 400),
        (6, "failed", 400), (7, "failed", 400), (8, "accepted", 202)]
    fields = [r["error"]["field"] for r in results if r["outcome"] == "failed"]
    assert fields[:4] == ["document_id", "document_id", "text", "body"]
    assert fields[4].startswith("document_id.0.0")
    for doc_id in ("bulk-good-1", "bulk-good-2"):
        assert (await wait_document(tenant, doc_id))["status"] == "ready"


async def test_a_bulk_line_a_delete_overtakes_is_refused_alone(stack, tenant, db):
    """The lines of one request are written together (one transaction for their rows, one statement
    confirming their bytes), yet a line whose document is deleted between its row and its bytes is
    refused on its own, its bytes removed, while the others are accepted and ingested."""
    texts = {f"race-{i}": document([paragraph(t)]) for i, t in enumerate(("glaciers", "lagoons", "canyons"))}
    put_document(tenant, "race-1", texts["race-1"])
    assert (await wait_document(tenant, "race-1"))["status"] == "ready"
    body = ndjson(*({"document_id": d, "text": t + (" Revised." if d == "race-1" else "")} for d, t in texts.items()))
    path = f"/entities/{tenant.entity_id}/documents"
    async with Hold(db, "upload:stored-version", tenant.entity_id, "race-1") as hold:
        bulk = asyncio.ensure_future(asyncio.to_thread(tenant.upload.post, path, raw=body, headers=NDJSON))
        await hold.reached()  # race-1's version 2 row exists; its bytes are not stored yet
        status, answer = await asyncio.to_thread(tenant.upload.delete, f"{path}/race-1")
        assert status == 200 and answer["deleted"], answer
    status, answer = await bulk
    assert status == 200, answer
    assert [(r["document_id"], r["outcome"], r["status"], r.get("version")) for r in answer["results"]] == [
        ("race-0", "accepted", 202, 1), ("race-1", "failed", 409, None), ("race-2", "accepted", 202, 1)]
    assert "was deleted while version 2 was being uploaded" in answer["results"][1]["error"]["message"]
    for doc_id in ("race-0", "race-2"):
        doc = await wait_document(tenant, doc_id)
        assert (doc["status"], doc["version"]) == ("ready", 1)
        assert [c["content"] for c in await chunks(db, tenant.entity_id, doc_id)] == [texts[doc_id]]
    await _nothing_left(stack, tenant, db, "race-1")


def test_bulk_route_refuses_what_is_not_ndjson(stack, tenant):
    path = f"/entities/{tenant.entity_id}/documents"
    status, answer = tenant.upload.post(path, raw=b'{"document_id": "x", "text": "y"}',
                                        headers={"Content-Type": "application/json"})
    assert (status, answer["field"]) == (415, "Content-Type")
    status, answer = tenant.upload.post(path, raw=b"\n \n", headers=NDJSON)
    assert (status, answer["field"]) == (400, "body")
    too_many = b"".join(json.dumps({"document_id": f"d{i}", "text": "x"}).encode() + b"\n" for i in range(1001))
    status, answer = tenant.upload.post(path, raw=too_many, headers=NDJSON)
    assert (status, answer["field"]) == (400, "body")


async def test_sdk_upload_files_sends_small_files_in_bulk(stack, tenant, tmp_path):
    from edgeindex_client import AsyncClient

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, topic in enumerate(TOPICS[:4]):
        (folder / f"n{i}.txt").write_text(document([paragraph(topic)]))
    (folder / "bad.png").write_bytes(b"\x89PNG not a type this deployment takes")
    requests: list[str] = []

    def log(request):
        requests.append(f"{request.method} {request.url.path}")

    import httpx

    async with httpx.AsyncClient(event_hooks={"request": [lambda r: _async(log, r)]}) as http:
        async with AsyncClient(tenant.key, base_url=stack.url("upload"), http_client=http) as client:
            outcomes = await client.upload_files(tenant.entity_id, [folder])
            by_id = {o.document_id: o for o in outcomes}
            assert sorted(by_id) == ["bad.png", "n0.txt", "n1.txt", "n2.txt", "n3.txt"]
            assert [o.document_id for o in outcomes if o.ok] == ["n0.txt", "n1.txt", "n2.txt", "n3.txt"]
            assert by_id["bad.png"].error.status == 415  # its own error; the others go on
            assert requests == [f"POST /entities/{tenant.entity_id}/documents"]  # one request for all five
            for i in range(4):
                assert (await client.wait_ready(tenant.entity_id, f"n{i}.txt")).status == "ready"
            again = await client.upload_files(tenant.entity_id, [folder / f"n{i}.txt" for i in range(4)])
            assert [o.skipped for o in again] == [True] * 4


async def _async(fn, *args):
    fn(*args)
