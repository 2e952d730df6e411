"""``edgeindex dev``'s bucket snapshot is incremental: it reads the embedded moto bucket in process and
copies only new or changed objects, never listing the bucket over HTTP (which slowed uploads as the
bucket filled)."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from edgeindex.bindings import aws
from edgeindex.runtime.dev import S3Snapshot


class NoListing:
    """An S3 client that refuses to list: the snapshot must not need it."""

    def __init__(self, client) -> None:
        self.client = client

    def get_paginator(self, name):
        raise AssertionError(f"the snapshot listed the bucket ({name})")

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_snapshot_copies_only_new_or_changed_objects(stack, tmp_path):
    s = stack.config.services.s3
    s3 = aws.client("s3", endpoint=stack.s3_endpoint, region=s.region, access_key_id=s.access_key_id,
                    secret_access_key=s.secret_access_key)
    bucket = f"snapshot-test-{os.getpid()}"
    s3.create_bucket(Bucket=bucket)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"docs/d{i}/v1/a b.txt", Body=f"object {i}".encode(), ContentType="text/plain",
                      Metadata={"sha256": f"h{i}"})
    snapshot = S3Snapshot(NoListing(s3), bucket, tmp_path)

    assert snapshot.save() == 3
    assert snapshot.save() == 0  # nothing new: nothing copied
    s3.put_object(Bucket=bucket, Key="docs/d1/v1/a b.txt", Body=b"changed", ContentType="text/plain")
    s3.put_object(Bucket=bucket, Key="docs/d3/v1/new.txt", Body=b"new")
    s3.delete_object(Bucket=bucket, Key="docs/d0/v1/a b.txt")
    assert snapshot.save() == 2

    folder = tmp_path / bucket
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(manifest) == ["docs/d1/v1/a b.txt", "docs/d2/v1/a b.txt", "docs/d3/v1/new.txt"]
    assert (folder / quote("docs/d1/v1/a b.txt", safe="")).read_bytes() == b"changed"
    assert not (folder / quote("docs/d0/v1/a b.txt", safe="")).exists()
    assert manifest["docs/d2/v1/a b.txt"]["content_type"] == "text/plain"
    assert manifest["docs/d2/v1/a b.txt"]["metadata"] == {"sha256": "h2"}

    # What was saved comes back into an empty bucket, as after a restart.
    for key in list(manifest):
        s3.delete_object(Bucket=bucket, Key=key)
    assert S3Snapshot(s3, bucket, tmp_path).restore() == 3
    assert s3.get_object(Bucket=bucket, Key="docs/d3/v1/new.txt")["Body"].read() == b"new"
    restored = s3.get_object(Bucket=bucket, Key="docs/d2/v1/a b.txt")
    assert (restored["ContentType"], restored["Metadata"]) == ("text/plain", {"sha256": "h2"})
