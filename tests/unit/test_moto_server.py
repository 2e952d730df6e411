"""The dev stack's embedded moto served with keep-alive (runtime/moto_server.py): connections stay open
across requests, S3 and SQS answer as through moto's own server, S3 metadata names keep underscores."""

from __future__ import annotations

import http.client

import boto3
import pytest
from botocore.config import Config

from edgeindex.runtime import moto_speedups
from edgeindex.runtime.dev import free_port
from edgeindex.runtime.moto_server import KeepAliveMotoServer


@pytest.fixture(scope="module")
def endpoint():
    moto_speedups.apply()
    port = free_port()
    server = KeepAliveMotoServer("127.0.0.1", port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _client(service: str, endpoint: str):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def test_one_connection_serves_many_requests(endpoint):
    """moto's werkzeug server answered every request with ``Connection: close``: a new TCP connection per call."""
    conn = http.client.HTTPConnection(endpoint.removeprefix("http://"), timeout=10)
    conn.connect()
    sock = conn.sock
    for _ in range(3):
        conn.request("GET", "/", headers={"Host": "s3.amazonaws.com"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
        assert (resp.getheader("Connection") or "").lower() != "close"
        assert conn.sock is sock  # http.client drops its socket when the server says it closes
    conn.close()


def test_s3_and_sqs_answer_through_it(endpoint):
    s3, sqs = _client("s3", endpoint), _client("sqs", endpoint)
    s3.create_bucket(Bucket="kept")
    s3.put_object(Bucket="kept", Key="a/b.txt", Body=b"x" * 100_000, ContentType="text/plain")
    got = s3.get_object(Bucket="kept", Key="a/b.txt")
    assert got["Body"].read() == b"x" * 100_000 and got["ContentType"] == "text/plain"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="kept")["Contents"]] == ["a/b.txt"]
    url = sqs.create_queue(QueueName="kept")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="hello")
    [message] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert message["Body"] == "hello"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)


def test_metadata_names_keep_their_underscores(endpoint):
    """As through moto's own request handler: ``x-amz-meta-source_file`` is not read back as ``source-file``."""
    s3 = _client("s3", endpoint)
    s3.create_bucket(Bucket="meta")
    s3.put_object(Bucket="meta", Key="k", Body=b"x", Metadata={"source_file": "a.txt", "plain-name": "b"})
    assert s3.head_object(Bucket="meta", Key="k")["Metadata"] == {"source_file": "a.txt", "plain-name": "b"}
