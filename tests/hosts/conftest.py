"""Two hosts that share nothing on disk: host A runs upload, ingest and search and the services
(Postgres, Redis, the object store and queue over HTTP); host B runs search and mcp with a state
folder of its own, on A's services only. This package runs after the end-to-end tests' stack is
stopped (moto keeps its state per test process: two embedded stores in one process would share
queues, and one stack's ingest worker would take the other's messages)."""

from __future__ import annotations

import pytest

from ..helpers import Client, running_stack


@pytest.fixture(scope="package")
def host_a(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("host-a"), workers=["upload", "ingest", "search"],
                       EDGEINDEX_KV_BACKEND="redis") as started:
        yield started


@pytest.fixture(scope="package")
def host_b(tmp_path_factory, host_a):
    shared = {"EDGEINDEX_KV_BACKEND": "redis", "EDGEINDEX_KV_URL": host_a.kv_url,
              "EDGEINDEX_DATABASE_URL": host_a.dsn, "EDGEINDEX_S3_ENDPOINT": host_a.s3_endpoint,
              "EDGEINDEX_SQS_ENDPOINT": host_a.sqs_endpoint}
    with running_stack(tmp_path_factory.mktemp("host-b"), workers=["search", "mcp"], **shared) as started:
        yield started


@pytest.fixture(scope="package")
def admin(host_a) -> Client:
    return Client(host_a.url("upload"), host_a.admin_key)
