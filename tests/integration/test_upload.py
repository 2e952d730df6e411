"""The upload worker over HTTP: presigned, multipart and direct uploads, validation, tenancy, deletion."""

from __future__ import annotations

import urllib.request

import pytest
from edgeindex import cache
from edgeindex.bindings import aws
from edgeindex.bindings.kv import DiskKV
from edgeindex.object_keys import document_objects_prefix, object_key, run_prefix

from ..helpers import Client, generation, new_tenant, put_document, wait_document

BUCKET = "edgeindex-documents"
TEXT = ("Edge workers answer search requests close to the agents that send them.\n\n"
        "Documents are uploaded through presigned URLs and ingested from a queue.")


def http_put(url: str, data: bytes, headers: dict | None = None) -> tuple[int, dict]:
    # (urllib would label a body as a form otherwise)
    req = urllib.request.Request(url, data=data, method="PUT",
                                 headers=headers or {"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, dict(resp.headers)


@pytest.fixture(scope="module")
def s3(stack):
    s = stack.config.services.s3
    return aws.client("s3", endpoint=stack.s3_endpoint, region=s.region, access_key_id=s.access_key_id,
                      secret_access_key=s.secret_access_key)


def object_keys(s3, prefix: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]


async def chunk_rows(db, entity_id: str, document_id: str) -> list[dict]:
    return await db.fetch("SELECT id::text, position, start_char, end_char, content, model_id FROM chunks "
                          "WHERE entity_id = %s AND document_id = %s ORDER BY position", (entity_id, document_id))


async def test_presigned_upload_is_ingested(stack, tenant, db, s3):
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", {
        "document_id": "pre-1", "filename": "notes/edge workers.md", "content_type": "text/markdown",
        "size_bytes": len(TEXT), "title": "Edge notes", "source": "wiki", "tags": ["edge", "search"],
        "metadata": {"lang": "en"}})
    assert status == 201, answer
    assert answer["status"] == "pending" and answer["version"] == 1
    assert answer["object_key"] == object_key(tenant.entity_id, "pre-1", 1, "edge_workers.md",
                                              await generation(db, tenant.entity_id, "pre-1"))
    upload = answer["upload"]
    assert upload["method"] == "PUT" and upload["headers"] == {"Content-Type": "text/markdown"}
    assert http_put(upload["url"], TEXT.encode(), upload["headers"])[0] == 200

    doc = await wait_document(tenant, "pre-1")
    assert doc["status"] == "ready", doc
    assert (doc["title"], doc["source"], doc["tags"], doc["content_type"]) == ("Edge notes", "wiki", ["edge", "search"],
                                                                             "text/markdown")
    assert doc["chunk_count"] == doc["chunks_embedded"] == 1 and doc["chunks_reused"] == 0
    assert doc["size_bytes"] == len(TEXT) and doc["summary"]
    rows = await chunk_rows(db, tenant.entity_id, "pre-1")
    assert [(r["position"], r["start_char"], r["end_char"]) for r in rows] == [(0, 0, len(TEXT))]
    assert rows[0]["content"] == TEXT and rows[0]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert object_keys(s3, document_objects_prefix(tenant.entity_id, "pre-1")) == [answer["object_key"]]
    assert object_keys(s3, f"artifacts/{tenant.entity_id}/pre-1/") == []  # small outputs stay in checkpoints


async def test_direct_upload_is_ingested(tenant, db):
    doc = put_document(tenant, "direct-1", "<html><head><title>Found title</title></head><body><p>Direct upload of "
                       "a small HTML page.</p><p>Second paragraph.</p></body></html>", content_type="text/html",
                       source="crawler", tags=["web"])
    assert doc["status"] in ("pending", "processing", "ready") and doc["version"] == 1
    doc = await wait_document(tenant, "direct-1")
    assert doc["status"] == "ready" and doc["title"] == "Found title"  # no title given: the page's own
    assert doc["source"] == "crawler" and doc["tags"] == ["web"]
    rows = await chunk_rows(db, tenant.entity_id, "direct-1")
    assert rows[0]["content"] == "Direct upload of a small HTML page.\n\nSecond paragraph."


async def test_multipart_upload_with_two_parts(tenant, db):
    part_size = 8 * 1024 * 1024  # MULTIPART_PART_BYTES
    # Blank runs keep the text (and the embedding work) small while the file spans two parts.
    head = b"Multipart uploads carry large files in parts.\n"
    part1 = head + b" " * (part_size - len(head))
    part2 = b"\nThe second part ends the document."
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", {
        "document_id": "multi-1", "content_type": "text/plain", "size_bytes": len(part1) + len(part2),
        "multipart": True})
    assert status == 201, answer
    multipart = answer["multipart"]
    assert "upload" not in answer and multipart["part_size"] == part_size
    assert [p["part_number"] for p in multipart["parts"]] == [1, 2]
    etags = [{"part_number": p["part_number"], "etag": http_put(p["url"], body)[1]["ETag"]}
             for p, body in zip(multipart["parts"], (part1, part2))]
    complete = Client("", tenant.key)
    status, body = complete.post(multipart["complete_url"], {"upload_id": multipart["upload_id"], "parts": etags})
    assert status == 200, body
    assert body["size_bytes"] == len(part1) + len(part2)
    status, again = complete.post(multipart["complete_url"], {"upload_id": multipart["upload_id"], "parts": etags})
    assert status == 409 and again["field"] == "upload_id"

    doc = await wait_document(tenant, "multi-1")
    assert doc["status"] == "ready", doc
    rows = await chunk_rows(db, tenant.entity_id, "multi-1")
    assert "".join(r["content"] for r in rows) == (
        "Multipart uploads carry large files in parts.\n\nThe second part ends the document.")


def test_large_declared_size_gets_multipart_automatically(tenant):
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", {
        "content_type": "application/pdf", "size_bytes": 20 * 1024 * 1024})
    assert status == 201
    assert answer["document_id"].startswith("doc_")
    assert [p["part_number"] for p in answer["multipart"]["parts"]] == [1, 2, 3]


@pytest.mark.parametrize("body,status,field", [
    ({"content_type": "image/png", "size_bytes": 10}, 415, "content_type"),
    ({"content_type": "text/plain; charset=latin-1", "size_bytes": 10}, 415, "content_type"),
    ({"content_type": "text/plain", "size_bytes": 52428801}, 413, "size_bytes"),
    ({"content_type": "text/plain", "size_bytes": -1}, 400, "size_bytes"),
    ({"content_type": "text/plain"}, 400, "size_bytes"),
    ({"content_type": "text/plain", "size_bytes": 1, "document_id": "bad\u0001id"}, 400, "document_id"),
    ({"content_type": "text/plain", "size_bytes": 1, "tags": ["a,b"]}, 400, "tags.0"),
    ({"content_type": "text/plain", "size_bytes": 1, "tags": "a"}, 400, "tags"),
    ({"content_type": "text/plain", "size_bytes": 1, "title": "x" * 501}, 400, "title"),
    ({"content_type": "text/plain", "size_bytes": 1, "metadata": {"k": "v" * 20000}}, 400, "metadata"),
    ({"content_type": "text/plain", "size_bytes": 1, "colour": "red"}, 400, "colour"),
])
def test_bad_upload_requests_name_the_field(tenant, body, status, field):
    got, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", body)
    assert (got, answer["field"]) == (status, field), answer
    assert answer["message"]


def test_bad_direct_uploads_name_the_field(tenant):
    path = f"/entities/{tenant.entity_id}/documents/bad-1"
    status, answer = tenant.upload.put(path, raw=b"", headers={"Content-Type": "text/plain"})
    assert (status, answer["field"]) == (400, "body")
    status, answer = tenant.upload.put(path, raw=b"x", headers={"Content-Type": "application/zip"})
    assert (status, answer["field"]) == (415, "Content-Type")
    status, answer = tenant.upload.put(path + "?tags=" + "t," * 60, raw=b"x", headers={"Content-Type": "text/plain"})
    assert (status, answer["field"]) == (400, "tags")
    status, answer = tenant.upload.get(path)
    assert status == 404  # nothing was stored by the refused requests


def test_tenancy_is_enforced(stack, upload_admin, tenant):
    other = new_tenant(stack, upload_admin)
    status, answer = tenant.upload.post(f"/entities/{other.entity_id}/uploads",
                                        {"content_type": "text/plain", "size_bytes": 1})
    assert status == 403 and other.entity_id in answer["message"]
    assert tenant.upload.get(f"/entities/{other.entity_id}/documents")[0] == 403
    assert Client(stack.url("upload")).get(f"/entities/{tenant.entity_id}/documents")[0] == 401
    assert tenant.upload.post("/admin/entities", {"id": "x1", "kind": "user"})[0] == 403
    status, answer = upload_admin.post("/entities/no-such-entity/uploads",
                                       {"content_type": "text/plain", "size_bytes": 1})
    assert (status, answer["field"]) == (404, "entity_id")


def test_admin_routes(stack, upload_admin):
    status, answer = upload_admin.post("/admin/entities", {"id": "grp-admin-test", "kind": "group", "name": "G"})
    assert status == 201 and answer["kind"] == "group"
    assert upload_admin.post("/admin/entities", {"id": "grp-admin-test", "kind": "group"})[0] == 409
    assert upload_admin.post("/admin/entities", {"id": "g2", "kind": "planet"})[1]["field"] == "kind"
    assert "grp-admin-test" in [e["id"] for e in upload_admin.get("/admin/entities")[1]["entities"]]
    status, key = upload_admin.post("/admin/keys", {"name": "k", "entity_ids": ["grp-admin-test"]})
    assert status == 201 and key["key"].startswith("ei_")
    assert upload_admin.post("/admin/keys", {"name": "k", "entity_ids": ["missing-entity"]})[0] == 404
    holder = Client(stack.url("upload"), key["key"])
    assert holder.get("/entities/grp-admin-test/documents")[0] == 200
    assert upload_admin.delete(f"/admin/keys/{key['id']}")[0] == 200
    assert key["id"] in [k["id"] for k in upload_admin.get("/admin/keys")[1]["keys"]]


async def test_list_documents(tenant):
    for name in ("list-b", "list-a", "list-c"):
        put_document(tenant, name, f"Document {name} for the listing test.")
    for name in ("list-a", "list-b", "list-c"):
        await wait_document(tenant, name)
    status, page = tenant.upload.get(f"/entities/{tenant.entity_id}/documents?limit=2")
    assert status == 200 and [d["document_id"] for d in page["documents"]] == ["list-a", "list-b"]
    status, rest = tenant.upload.get(f"/entities/{tenant.entity_id}/documents?limit=2&after={page['next_after']}")
    assert [d["document_id"] for d in rest["documents"]] == ["list-c"] and rest["next_after"] is None
    assert tenant.upload.get(f"/entities/{tenant.entity_id}/documents?status=done")[1]["field"] == "status"


async def test_delete_removes_document_chunks_objects_and_cached_results(stack, tenant, db, s3):
    put_document(tenant, "del-1", TEXT + "\n\nA third paragraph for deletion.")
    put_document(tenant, "keep-1", "A document that stays.")
    doc = await wait_document(tenant, "del-1")
    await wait_document(tenant, "keep-1")
    assert doc["status"] == "ready"
    ids = [r["id"] for r in await chunk_rows(db, tenant.entity_id, "del-1")]
    kept = [r["id"] for r in await chunk_rows(db, tenant.entity_id, "keep-1")]
    kv = DiskKV(stack.config.state_path / "kv", namespace="cache")
    try:
        seq = cache.read_sequences(kv, [tenant.entity_id])
        assert cache.store(kv, f"test-del-{tenant.entity_id}", {"results": ids + kept}, chunk_ids=ids + kept,
                           entity_ids=[tenant.entity_id], sequences=seq, ttl=600)
        assert cache.store(kv, f"test-keep-{tenant.entity_id}", {"results": kept}, chunk_ids=kept,
                           entity_ids=[tenant.entity_id], sequences=seq, ttl=600)

        status, answer = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/del-1")
        assert status == 200, answer
        assert answer["deleted"] is True and answer["chunks_deleted"] == len(ids)
        assert answer["cache_entries_invalidated"] == 1
        assert kv.get(cache.result_key(f"test-del-{tenant.entity_id}")) is None  # held a deleted chunk: dropped
        kept_entry = kv.get(cache.result_key(f"test-keep-{tenant.entity_id}"))
        assert kept_entry["payload"] == {"results": kept}  # not dropped through the reverse map ...
        now = cache.read_sequences(kv, [tenant.entity_id])
        assert cache.load(kv, f"test-keep-{tenant.entity_id}", now) is None  # ... but retired: the entity changed
    finally:
        kv.close()
    assert tenant.upload.get(f"/entities/{tenant.entity_id}/documents/del-1")[0] == 404
    assert await chunk_rows(db, tenant.entity_id, "del-1") == []
    assert object_keys(s3, document_objects_prefix(tenant.entity_id, "del-1")) == []
    assert await db.fetch("SELECT id FROM workflow_runs WHERE starts_with(id, %s)",
                          (run_prefix(tenant.entity_id, "del-1"),)) == []
    assert tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/del-1")[0] == 404

    # The id can be used again: a new life starting at version 1.
    put_document(tenant, "del-1", "Reborn document.")
    doc = await wait_document(tenant, "del-1")
    assert (doc["status"], doc["version"], doc["chunk_count"]) == ("ready", 1, 1)
