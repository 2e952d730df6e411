"""Create what wrangler.toml names: buckets, queues (with dead-letter queues) and
the bucket→queue event notifications. Idempotent; run by `edgeindex dev` and by
`edgeindex provision` against real services."""

from __future__ import annotations

from collections.abc import Callable

from botocore.exceptions import ClientError

from ..bindings import aws
from ..config import Config

_EVENTS = {"object-create": "s3:ObjectCreated:*"}


def _ensure_bucket(s3, name: str) -> None:
    try:
        s3.head_bucket(Bucket=name)
    except ClientError:
        s3.create_bucket(Bucket=name)


def provision(config: Config, *, s3_endpoint: str, sqs_endpoint: str,
              before_notifications: Callable | None = None) -> dict:
    s = config.services
    s3 = aws.client("s3", endpoint=s3_endpoint, region=s.s3.region, access_key_id=s.s3.access_key_id,
                    secret_access_key=s.s3.secret_access_key)
    sqs = aws.client("sqs", endpoint=sqs_endpoint, region=s.sqs.region, access_key_id=s.sqs.access_key_id,
                     secret_access_key=s.sqs.secret_access_key)
    visibility = {c.queue: c.visibility_timeout for w in config.workers.values() for c in w.queues.consumers}
    arns: dict[str, str] = {}
    for name in config.queue_names():
        attributes = {"VisibilityTimeout": str(visibility.get(name, 60)), "MessageRetentionPeriod": "1209600"}
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arns[name] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for bucket in config.bucket_names():
        _ensure_bucket(s3, bucket)
        if before_notifications:
            before_notifications(s3, bucket)
        notes = [n for n in config.event_notifications if n.bucket == bucket]
        if notes:
            queue_configs = []
            for i, note in enumerate(notes):
                entry = {"Id": f"edgeindex-{i}", "QueueArn": arns[note.queue],
                         "Events": [_EVENTS[e] for e in note.events]}
                if note.prefix:
                    entry["Filter"] = {"Key": {"FilterRules": [{"Name": "prefix", "Value": note.prefix}]}}
                queue_configs.append(entry)
            s3.put_bucket_notification_configuration(
                Bucket=bucket, NotificationConfiguration={"QueueConfigurations": queue_configs})
    return {"s3": s3, "sqs": sqs, "queue_arns": arns}
