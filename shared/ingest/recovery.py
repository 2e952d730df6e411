"""Re-derive queue messages the embedded SQS lost across a restart of ``edgeindex dev``.

moto keeps queues in memory; bucket objects survive through snapshots. After a
restart, every document still ``pending`` or ``processing`` whose object is in
the bucket gets the object-created event re-sent (its run resumes from its
checkpoints; a duplicate is harmless). One whose object is missing:
- was ``processing``, or its upload had been acknowledged (direct upload,
  completed multipart): the upload is lost (it happened after the last
  snapshot) → ``failed`` with a reason that says to upload again;
- is ``pending`` with a presigned URL never known to be used: the client may
  simply not have uploaded yet, so it stays ``pending``.
"""

from __future__ import annotations

import json
import logging

import psycopg
from botocore.exceptions import ClientError
from psycopg.rows import dict_row

from .. import sqlfiles
from ..bindings import aws
from ..config import Config
from .events import object_created

log = logging.getLogger(__name__)
SQL = sqlfiles.load("ingest.sql")
LOST = "upload lost in an embedded-stack restart; upload again"


def _targets(config: Config) -> list[tuple[str, str, str]]:
    """(bucket, queue, key prefix) of every object-created notification."""
    return [(n.bucket, n.queue, n.prefix) for n in config.event_notifications if "object-create" in n.events]


def requeue_unfinished_sync(config: Config, *, dsn: str, s3_endpoint: str, sqs_endpoint: str) -> tuple[int, int]:
    """Returns (events re-sent, uploads marked lost)."""
    targets = _targets(config)
    if not targets:
        return 0, 0
    s = config.services
    s3 = aws.client("s3", endpoint=s3_endpoint, region=s.s3.region, access_key_id=s.s3.access_key_id,
                    secret_access_key=s.s3.secret_access_key)
    sqs = aws.client("sqs", endpoint=sqs_endpoint, region=s.sqs.region, access_key_id=s.sqs.access_key_id,
                     secret_access_key=s.sqs.secret_access_key)
    queue_urls: dict[str, str] = {}
    requeued = lost = 0
    with psycopg.connect(dsn, row_factory=dict_row, autocommit=True) as conn:
        try:
            rows = conn.execute(SQL["unfinished_documents"]).fetchall()
        except psycopg.errors.UndefinedTable:
            return 0, 0  # no schema yet: nothing was ever uploaded
        for row in rows:
            key = row["object_key"]
            target = next((t for t in targets if key and key.startswith(t[2])), None)
            if target is None:
                continue
            bucket, queue, _ = target
            try:
                head = s3.head_object(Bucket=bucket, Key=key)
            except ClientError as exc:
                if exc.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
                    raise
                head = None
            if head is not None:
                if queue not in queue_urls:
                    queue_urls[queue] = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
                event = object_created(bucket, key, size=head["ContentLength"], etag=head.get("ETag", "").strip('"'))
                sqs.send_message(QueueUrl=queue_urls[queue], MessageBody=json.dumps(event))
                requeued += 1
            elif row["status"] == "processing" or row["uploaded_at"] is not None:
                conn.execute(SQL["mark_lost"], {"entity_id": row["entity_id"], "document_id": row["document_id"],
                                                "version": row["version"], "error": LOST})
                lost += 1
    if requeued or lost:
        log.info("recovery: %d event(s) re-sent, %d upload(s) lost", requeued, lost)
    return requeued, lost
