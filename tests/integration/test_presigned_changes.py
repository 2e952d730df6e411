"""The object store's own presigned URLs (S3, R2) in front of a ready version (issue 11, item 2).

Such a URL stays usable until it expires, so its holder can PUT to the same key after the
version is ready. The shared stack hands out its own upload URLs (``uploads = "worker"``),
so these tests ask an in-process ``UploadService`` without a signer, against the stack's
database and moto bucket, for a real presigned URL of moto's server; the stack's ingest
worker takes the bucket's events as it does for any upload.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from edgeindex.bindings import aws
from edgeindex.bindings.bucket import S3Bucket
from edgeindex.ingest.events import object_created
from edgeindex.uploads.service import UploadLimits, UploadService

from ..helpers import Client, chunks, paragraph, wait_document, wait_for

BUCKET = "edgeindex-documents"
V1 = paragraph("harbours", word="shelter")
OTHER = V1.replace("harbours", "quarries")  # the same length: only the bytes differ
assert len(OTHER) == len(V1)


def _client(stack, kind: str):
    return aws.client(kind, endpoint=stack.s3_endpoint if kind == "s3" else stack.sqs_endpoint, region="us-east-1",
                      access_key_id="edgeindex", secret_access_key="edgeindex")


def _presigned_service(stack, db) -> UploadService:
    limits = UploadLimits(max_bytes=1_000_000, multipart_threshold=16 * 2**20, part_bytes=8 * 2**20,
                          allowed_types=["text/plain"], presign_expires=900)
    return UploadService(db=db, bucket=S3Bucket(_client(stack, "s3"), BUCKET), kv=None, limits=limits, signer=None)


def _http_put(url: str, data: bytes, headers: dict) -> int:
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method="PUT", headers=headers)) as resp:
        return resp.status


async def _outcomes(stack, tenant, document_id: str, count: int) -> list[dict]:
    admin = Client(stack.url("ingest"), stack.admin_key)

    def enough():
        status, body = admin.get(f"/outcomes?entity_id={tenant.entity_id}&document_id={document_id}")
        return body["outcomes"] if status == 200 and len(body["outcomes"]) >= count else None

    return await wait_for(lambda: asyncio.to_thread(enough), timeout=120)


async def test_a_presigned_re_put_behind_a_ready_version_is_noticed_and_refused(stack, tenant, db):
    service = _presigned_service(stack, db)
    answer = await service.request_upload(tenant.entity_id, {"document_id": "pre-reput", "content_type": "text/plain",
                                                             "size_bytes": len(V1)}, base_url="")
    upload = answer["upload"]
    assert "X-Amz-Signature=" in upload["url"] and upload["url"].startswith(stack.s3_endpoint)  # the store's own URL
    assert await asyncio.to_thread(_http_put, upload["url"], V1.encode(), upload["headers"]) == 200
    doc = await wait_document(tenant, "pre-reput")
    assert doc["status"] == "ready" and doc["object_warning"] is None, doc
    first = await _outcomes(stack, tenant, "pre-reput", 1)

    # The same object's event again (a redelivery): nothing changed, nothing to say.
    sqs = _client(stack, "sqs")
    url = sqs.get_queue_url(QueueName="edgeindex-ingest")["QueueUrl"]
    await asyncio.to_thread(sqs.send_message, QueueUrl=url, MessageBody=json.dumps(
        object_created(BUCKET, answer["object_key"], size=len(V1))))
    again = (await _outcomes(stack, tenant, "pre-reput", len(first) + 1))[-1]
    assert again["action"] == "ack" and not again["reason"].startswith("refused"), again
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/pre-reput")
    assert doc["object_warning"] is None, doc

    # The URL is still valid: other bytes of the same size go to the ready version's key.
    assert await asyncio.to_thread(_http_put, upload["url"], OTHER.encode(), upload["headers"]) == 200
    refused = (await _outcomes(stack, tenant, "pre-reput", len(first) + 2))[-1]
    assert refused == {"version": 1, "action": "ack", "reason": "refused: object changed behind ready version 1"}
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/pre-reput")
    assert (doc["status"], doc["version"], doc["ready_version"]) == ("ready", 1, 1), doc
    assert "overwritten after ingestion" in doc["object_warning"], doc
    # the index keeps what was checked at upload
    assert [c["content"] for c in await chunks(db, tenant.entity_id, "pre-reput")] == [V1]

    # A new version is the way to change the document; once it is ready the warning is gone.
    status, body = tenant.upload.put(f"/entities/{tenant.entity_id}/documents/pre-reput", raw=OTHER.encode(),
                                     headers={"Content-Type": "text/plain"})
    assert status == 202, body
    doc = await wait_document(tenant, "pre-reput", version=2)
    assert doc["status"] == "ready" and doc["object_warning"] is None, doc
