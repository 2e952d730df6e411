"""A whole stack on the Redis KV (`[services.kv] backend = "redis"`, the server started by the dev
stack): the workers' caches live in Redis, hits come back from it, and a change through ingestion
retires every cached answer that held the old text."""

from __future__ import annotations

import asyncio

import pytest
import redis

from ..helpers import Client, new_tenant, put_document, running_stack, wait_document


@pytest.fixture(scope="module")
def redis_stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("redis-state"), EDGEINDEX_KV_BACKEND="redis") as started:
        yield started


def _search(tenant, body) -> dict:
    status, answer = tenant.search.post("/search", body)
    assert status == 200, answer
    return answer


async def test_caches_live_in_redis_and_a_change_retires_what_held_it(redis_stack):
    assert redis_stack.kv_url.startswith("redis://")
    admin = Client(redis_stack.url("upload"), redis_stack.admin_key)
    tenant = new_tenant(redis_stack, admin, prefix="r")
    put_document(tenant, "bread", "To bake sourdough bread, feed the starter the night before and let the dough "
                                  "rise slowly in a cool kitchen.")
    put_document(tenant, "vacuum", "PostgreSQL autovacuum reclaims storage held by dead tuples on busy tables.")
    for doc in await asyncio.gather(wait_document(tenant, "bread"), wait_document(tenant, "vacuum")):
        assert doc["status"] == "ready", doc
    body = {"query": "how do I bake sourdough bread", "k": 3}
    first = _search(tenant, body)
    assert (first["cache"], _search(tenant, body)["cache"]) == ("none", "exact")

    server = redis.Redis.from_url(redis_stack.kv_url)
    try:
        keys = {k.decode() for k in server.scan_iter(match="cache:*")}
        assert any(k.startswith("cache:result:") for k in keys), keys
        assert f"cache:seq:{tenant.entity_id}" in keys
    finally:
        server.close()

    put_document(tenant, "bread", "Rye bread needs a long, cold proof; the crumb stays dense and moist.")
    assert (await wait_document(tenant, "bread", version=2))["status"] == "ready"
    after = _search(tenant, body)
    assert after["cache"] == "none"
    assert "Rye bread" in after["results"][0]["text"]
    bread = [r["text"] for r in after["results"] if r["document_id"] == "bread"]
    assert bread and not any("sourdough" in text for text in bread)
    assert _search(tenant, body)["cache"] == "exact"
