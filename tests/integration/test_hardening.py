"""Regression tests for what an outsider's probing found (issue "Hardening"), over real HTTP.

Each test names the failure it keeps closed: silent truncation, loose types, plain-text
500s, ids real corpora use, caches that hide new documents or answer another question.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import socket
import urllib.parse
import urllib.request
from urllib.parse import urlsplit

import pytest
from edgeindex.bindings import aws
from edgeindex.object_keys import document_objects_prefix
from edgeindex_client import path_segment

from ..helpers import new_tenant, put_document, wait_document


def _raw_http(url: str, payload: bytes, *, timeout: float = 30) -> tuple[int, dict, bytes]:
    """Send bytes as they are (malformed requests a client library would refuse to build)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        sock.sendall(payload)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
    return status, {k.decode().lower(): v.decode() for k, v in headers.items()}, body


def _chunked_put(url: str, path: str, key: str, pieces, content_type: str = "text/plain") -> tuple[int, dict]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    conn.request("PUT", path, body=iter(pieces), encode_chunked=True,
                 headers={"Authorization": f"Bearer {key}", "Content-Type": content_type,
                          "Transfer-Encoding": "chunked"})
    resp = conn.getresponse()
    body = json.loads(resp.read() or b"null")
    conn.close()
    return resp.status, body


# --- 1. bodies are read completely -------------------------------------------------------


def test_a_large_chunked_upload_is_stored_whole_not_cut(stack, tenant):
    data = bytes(random.Random(7).choice(b"abcdefghij klmnop\n") for _ in range(2_000_000))
    pieces = [data[i:i + 65536] for i in range(0, len(data), 65536)]  # ~2 MB: far more than one buffer
    # (declared a PDF, which it is not: ingestion fails at once instead of embedding 2 MB of noise)
    status, doc = _chunked_put(stack.url("upload"), f"/entities/{tenant.entity_id}/documents/big-1", tenant.key,
                               pieces, content_type="application/pdf")
    assert status == 202, doc
    assert doc["size_bytes"] == len(data)  # what the worker read ...
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region="us-east-1", access_key_id="edgeindex",
                    secret_access_key="edgeindex")
    listed = s3.list_objects_v2(Bucket="edgeindex-documents", Prefix=document_objects_prefix(tenant.entity_id, "big-1"))
    assert len(listed["Contents"]) == 1
    stored = s3.get_object(Bucket="edgeindex-documents", Key=listed["Contents"][0]["Key"])
    assert stored["Body"].read() == data  # ... and what the bucket holds


def test_a_json_body_sent_in_two_writes_is_read_whole(stack, tenant):
    body = json.dumps({"query": "platypus", "entity_ids": [tenant.entity_id], "cache": False}).encode()
    parts = urlsplit(stack.url("search"))
    head = (f"POST /search HTTP/1.1\r\nHost: {parts.hostname}\r\nAuthorization: Bearer {tenant.key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head + body[:10])
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):  # the server waits for the rest instead of answering
            sock.recv(1)
        sock.settimeout(30)
        sock.sendall(body[10:])
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:300]


# --- 5. every failure is JSON with the field, never a plain-text page --------------------


def _deep(n: int):
    value: object = "x"
    for _ in range(n):
        value = [value]
    return value


@pytest.mark.parametrize("body,field", [
    ({"query": "x", "filters": {"tags": _deep(40)}}, "filters.tags"),
    ({"query": "x\ud800y"}, "query"),
    ({"query": "x", "filters": {"updated_after": "9999-12-31T23:59:59-14:00"}}, "filters.updated_after"),
    ({"query": "x", "filters": {"created_before": "0001-01-01T00:00:00+14:00"}}, "filters.created_before"),
    ({"query": "x\u0000y"}, "query"),
])
def test_search_inputs_that_crashed_are_400_naming_the_field(stack, tenant, body, field):
    raw = json.dumps(body).encode()  # ensure_ascii: the lone surrogate travels as \ud800, as a client sends it
    status, answer = tenant.search.post("/search", raw=raw, headers={"Content-Type": "application/json"})
    assert status == 400, answer
    assert answer["field"].startswith(field) and answer["request_id"].startswith("req_")


def test_a_body_nested_past_the_parser_is_400(stack, tenant):
    raw = b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = tenant.search.post("/search", raw=raw, headers={"Content-Type": "application/json"})
    assert (status, answer["field"]) == (400, "body")


def test_nul_in_admin_fields_is_400_naming_the_field(upload_admin):
    status, answer = upload_admin.post("/admin/entities", {"id": "nul-entity", "kind": "user", "name": "a\u0000b"})
    assert (status, answer["field"]) == (400, "name")
    status, answer = upload_admin.post("/admin/keys", {"name": "k\u0000", "entity_ids": []})
    assert (status, answer["field"]) == (400, "name")


def test_a_non_latin1_authorization_header_is_401_json(stack):
    parts = urlsplit(stack.url("search"))
    request = (f"POST /search HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Length: 2\r\nConnection: close\r\n"
               "Authorization: Bearer ").encode() + "ключ€".encode() + b"\r\n\r\n{}"
    status, headers, body = _raw_http(stack.url("search"), request)
    assert status == 401 and headers["content-type"].startswith("application/json")
    assert json.loads(body)["field"] == "Authorization"


def test_json_routes_refuse_other_content_types(tenant):
    status, answer = tenant.search.post("/search", raw=b"query=x", headers={"Content-Type": "text/plain"})
    assert (status, answer["error"], answer["field"]) == (415, "unsupported_media_type", "Content-Type")


def test_unknown_routes_and_methods_answer_json_with_a_request_id(stack, tenant):
    status, answer = tenant.search.get("/nowhere")
    assert (status, answer["error"]) == (404, "not_found") and answer["request_id"].startswith("req_")
    req = urllib.request.Request(stack.url("search") + "/search", method="GET",
                                 headers={"Authorization": f"Bearer {tenant.key}"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 405 and err.value.headers["Allow"] == "POST"
    assert json.loads(err.value.read())["error"] == "method_not_allowed"


@pytest.mark.parametrize("request_bytes", [
    b"GARBAGE\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n",  # over MAX_HEADER_BYTES
    b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
])
def test_requests_aiohttp_cannot_parse_get_the_json_error_shape(stack, request_bytes):
    status, headers, body = _raw_http(stack.url("search"), request_bytes)
    assert 400 <= status < 500
    assert headers["content-type"].startswith("application/json"), body[:200]
    assert json.loads(body)["request_id"].startswith("req_")


def test_the_workers_still_answer_after_the_bad_inputs(stack):
    for name in stack.config.workers:  # every worker the stack runs
        with urllib.request.urlopen(stack.url(name) + "/health", timeout=30) as resp:
            assert json.loads(resp.read())["status"] == "ok"


# --- 6. ids that real corpora use --------------------------------------------------------

REAL_IDS = ["reports/2025/q3.pdf", "https://example.com/a?b=c&d=e#f", "<dbpedia:Babylon_5:_Voices>",
            "notes from monday", "été-報告", "..", ".hidden", "x' OR 1=1--", "a" * 200]


async def test_document_ids_of_any_shape_upload_and_search_as_given(stack, tenant):
    for i, document_id in enumerate(REAL_IDS):
        status, doc = tenant.upload.put(f"/entities/{tenant.entity_id}/documents/{path_segment(document_id)}",
                                        raw=f"Document number {i} about quokka habitat {i}.".encode(),
                                        headers={"Content-Type": "text/plain"})
        assert status == 202, (document_id, doc)
        assert doc["document_id"] == document_id
    for document_id in REAL_IDS:
        ready = await wait_document_id(tenant, document_id)
        assert (ready["status"], ready["document_id"]) == ("ready", document_id), ready
    status, answer = tenant.search.post("/search", {"query": "quokka habitat", "k": 20, "cache": False,
                                                    "filters": {"document_ids": REAL_IDS[:3]}})
    assert status == 200 and {r["document_id"] for r in answer["results"]} == set(REAL_IDS[:3])
    # a path-shaped id never escapes its document: deleting it leaves the others alone
    status, _ = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/{path_segment('..')}")
    assert status == 200
    status, listed = tenant.upload.get(f"/entities/{tenant.entity_id}/documents")
    assert sorted(d["document_id"] for d in listed["documents"]) == sorted(set(REAL_IDS) - {".."})


async def wait_document_id(tenant, document_id: str) -> dict:
    return await wait_document(tenant, path_segment(document_id))


@pytest.mark.parametrize("document_id", ["bad\u0001id", " ", "é" * 300])
def test_document_ids_outside_the_documented_limits_are_400(tenant, document_id):
    status, answer = tenant.upload.put(f"/entities/{tenant.entity_id}/documents/{path_segment(document_id)}",
                                       raw=b"text", headers={"Content-Type": "text/plain"})
    assert (status, answer["field"]) == (400, "document_id"), answer


# --- 7. strict types ---------------------------------------------------------------------


@pytest.mark.parametrize("admin", ["yes", "true", 1])
def test_only_a_json_true_makes_an_admin_key(upload_admin, admin):
    status, answer = upload_admin.post("/admin/keys", {"name": "sneaky", "admin": admin})
    assert (status, answer["field"]) == (400, "admin")


def test_size_bytes_must_be_a_number(tenant):
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads",
                                        {"content_type": "text/plain", "size_bytes": "10"})
    assert (status, answer["field"]) == (400, "size_bytes")


# --- 2. uploads bind to what was declared ------------------------------------------------


async def test_a_presigned_upload_of_another_size_than_declared_is_refused(tenant):
    upload = _upload_url(tenant, "short-1", 100)
    code, body = _put(upload["url"], b"only forty-five bytes of the hundred declared")
    assert (code, body["field"]) == (400, "body")
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/short-1")
    assert (doc["status"], doc["waiting_for"]) == ("pending", "upload")  # nothing was stored


def test_a_multipart_upload_completed_with_fewer_parts_is_refused(tenant):
    size = 9 * 1024 * 1024
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads", {
        "document_id": "parts-1", "content_type": "text/plain", "size_bytes": size, "multipart": True})
    assert status == 201 and len(answer["multipart"]["parts"]) == 2
    part = answer["multipart"]["parts"][0]
    req = urllib.request.Request(part["url"], data=b"45 bytes of a document declared as 9 MB....", method="PUT")
    with urllib.request.urlopen(req, timeout=30) as resp:
        etag = resp.headers["ETag"]
    status, body = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads/parts-1/complete", {
        "upload_id": answer["multipart"]["upload_id"], "parts": [{"part_number": 1, "etag": etag}]})
    assert (status, body["field"]) == (400, "parts")
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/parts-1")
    assert doc["status"] == "failed" and f"{size} were declared" in doc["error"]


# --- 3. and 4. caches are never wrong ----------------------------------------------------


async def test_a_document_that_becomes_ready_is_never_hidden_by_a_cached_answer(stack, tenant):
    put_document(tenant, "river-1", "Notes on river otters and their winter dens along the bank.")
    await wait_document(tenant, "river-1")
    request = {"query": "platypus migration report", "k": 5}
    first = tenant.search.post("/search", request)[1]
    second = tenant.search.post("/search", request)[1]
    assert second["cache"] == "exact"
    assert "platypus-1" not in {r["document_id"] for r in first["results"]}
    put_document(tenant, "platypus-1", "Platypus migration report: platypus populations moved upstream in May.")
    await wait_document(tenant, "platypus-1")
    after = tenant.search.post("/search", request)[1]
    assert after["cache"] == "none"
    assert after["results"][0]["document_id"] == "platypus-1"


async def test_the_semantic_cache_never_answers_a_question_about_another_number(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin)
    put_document(tenant, "inv-4711", "Invoice 4711: three crates of apples delivered to the harbour office.")
    put_document(tenant, "inv-4712", "Invoice 4712: two barrels of cider delivered to the mill.")
    await wait_document(tenant, "inv-4711")
    await wait_document(tenant, "inv-4712")
    first = tenant.search.post("/search", {"query": "invoice 4711", "alpha": 0, "k": 1})[1]
    assert first["results"][0]["document_id"] == "inv-4711"
    # wait for the semantic pointer of the first search (stored after the response) to exist
    await _wait_semantic_pointer(stack, tenant)
    paraphrase = tenant.search.post("/search", {"query": "the invoice 4711", "alpha": 0, "k": 1})[1]
    assert paraphrase["cache"] == "semantic"  # the same question, reworded: the cache may answer
    other = tenant.search.post("/search", {"query": "invoice 4712", "alpha": 0, "k": 1})[1]
    assert other["cache"] == "none"
    assert other["results"][0]["document_id"] == "inv-4712"


async def _wait_semantic_pointer(stack, tenant):
    import psycopg

    from ..helpers import wait_for

    async def stored():
        async with await psycopg.AsyncConnection.connect(stack.dsn) as conn:
            cur = await conn.execute("SELECT count(*) FROM vector_index WHERE metadata->>'query' = 'invoice 4711'")
            return (await cur.fetchone())[0] > 0

    await wait_for(stored, timeout=30)


# --- 2. upload URLs are binding even on a store that checks nothing ----------------------


def _upload_url(tenant, document_id: str, size: int, content_type: str = "text/plain") -> dict:
    status, answer = tenant.upload.post(f"/entities/{tenant.entity_id}/uploads",
                                        {"document_id": document_id, "content_type": content_type,
                                         "size_bytes": size})
    assert status == 201, answer
    return answer["upload"]


def _put(url: str, data: bytes, content_type: str = "text/plain") -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_embedded_mode_hands_out_upload_urls_the_worker_verifies(stack, tenant):
    upload = _upload_url(tenant, "signed-1", 11)
    assert upload["url"].startswith(stack.url("upload") + "/uploads/")


@pytest.mark.parametrize("tamper,status,field", [
    (lambda url: url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB"), 403, "signature"),   # forged
    (lambda url: url.replace("/uploads/", "/uploads/x"), 403, "signature"),                    # altered grant
])
def test_a_forged_or_altered_upload_url_is_refused(tenant, tamper, status, field):
    upload = _upload_url(tenant, "forged-1", 11)
    code, body = _put(tamper(upload["url"]), b"hello world")
    assert (code, body["field"]) == (status, field)


def test_an_expired_upload_url_is_refused(stack, tenant):
    from edgeindex.uploads.signed_urls import UploadGrant, UploadSigner

    signer = UploadSigner("test-admin-key")  # the stack's admin secret signs its upload URLs
    grant = UploadGrant(entity_id=tenant.entity_id, document_id="old-1", version=1, object_key="docs/x/y/v1/z",
                        content_type="text/plain", size=5, expires_at=1577836800)  # 2020-01-01
    code, body = _put(f"{stack.url('upload')}/uploads/{signer.sign(grant)}", b"hello")
    assert (code, body["field"]) == (403, "expires")


def test_an_upload_url_binds_content_type_and_size(tenant):
    upload = _upload_url(tenant, "bound-1", 11)
    assert _put(upload["url"], b"hello world", content_type="text/html")[0] == 403
    code, body = _put(upload["url"], b"hello world, and more than was declared")
    assert (code, body["field"]) == (400, "body")
    assert _put(upload["url"], b"hello world")[0] == 200


async def test_another_tenants_url_cannot_write_into_a_document(stack, upload_admin, tenant):
    other = new_tenant(stack, upload_admin)
    mine = _upload_url(tenant, "shared-name", 11)
    _upload_url(other, "shared-name", 11)  # the other tenant's pending version of the same document id
    token = mine["url"].rsplit("/", 1)[1]
    payload, mac = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged.update(entity_id=other.entity_id, object_key=forged["object_key"].replace(tenant.entity_id,
                                                                                   other.entity_id))
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    code, body = _put(f"{stack.url('upload')}/uploads/{forged_payload}.{mac}", b"hello world")
    assert (code, body["field"]) == (403, "signature")
    status, doc = other.upload.get(f"/entities/{other.entity_id}/documents/shared-name")
    assert doc["status"] == "pending"  # nothing arrived


async def test_an_upload_url_is_spent_once_its_version_is_ready(tenant):
    upload = _upload_url(tenant, "once-1", 36)
    assert _put(upload["url"], b"The first and only text of once-one.")[0] == 200
    doc = await wait_document(tenant, "once-1")
    assert doc["status"] == "ready"
    code, body = _put(upload["url"], b"A replacement behind the index back.")
    assert (code, body["field"]) == (409, "token")


# --- 8. nothing stays pending without end ------------------------------------------------


async def test_status_says_what_a_document_waits_for_and_unused_uploads_expire(tenant, db):
    _upload_url(tenant, "never-1", 10)
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/never-1")
    assert (doc["status"], doc["waiting_for"]) == ("pending", "upload") and doc["upload_expires_at"]
    # as if its URL had expired an hour ago; the upload worker's sweep fails it with the reason
    await db.execute("UPDATE documents SET upload_expires_at = now() - interval '1 hour' "
                     "WHERE entity_id = %s AND id = 'never-1'", (tenant.entity_id,))
    doc = await wait_document(tenant, "never-1", timeout=120)
    assert (doc["status"], doc["step"]) == ("failed", "upload")
    assert doc["error"].startswith("the upload never arrived: its URL expired at ")
