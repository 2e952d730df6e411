"""S3 event notifications: reading the ones the bucket sends, writing equivalent ones for recovery."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus, unquote_plus

from ..errors import ValidationError
from ..object_keys import DOCS_PREFIX, ObjectRef, parse_object_key, with_size


def object_refs(body: Any) -> list[ObjectRef]:
    """Documents named by an event: [] for S3's test event and for other objects; ValidationError if not an event."""
    if isinstance(body, dict) and body.get("Event") == "s3:TestEvent":
        return []  # sent once when the notification is configured
    records = body.get("Records") if isinstance(body, dict) else None
    if not isinstance(records, list):
        raise ValidationError("message is not an S3 event notification (no Records)", field="Records")
    refs: list[ObjectRef] = []
    for record in records:
        try:
            name = record.get("eventName", "")
            obj = record["s3"]["object"]
            key = obj["key"]
        except (AttributeError, KeyError, TypeError):
            raise ValidationError("S3 event record without s3.object.key", field="Records") from None
        if not name.startswith("ObjectCreated") or not unquote_plus(key).startswith(DOCS_PREFIX):
            continue
        refs.append(with_size(parse_object_key(key), obj.get("size")))
    return refs


def object_created(bucket: str, key: str, *, size: int, etag: str = "",
                   configuration_id: str = "edgeindex-recovery") -> dict:
    """The body S3 sends for a new object (what recovery and the reconciler re-send when the queue lost it;
    ``configuration_id`` says which of them sent it, where S3 names the notification)."""
    return {"Records": [{
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        "s3": {"s3SchemaVersion": "1.0", "configurationId": configuration_id,
               "bucket": {"name": bucket},
               "object": {"key": quote_plus(key, safe="/"), "size": size, "eTag": etag}},
    }]}
