"""Two hosts on one Redis KV (`[services.kv] backend = "redis"`): what host A changes, host B's
caches never hide; a key's rate limit is the deployment's; Redis restarting costs answers their
cache, never their correctness."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
import redis
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ..helpers import Client, new_tenant, put_document, wait_document

BREAD = ("To bake sourdough bread, feed the starter the night before and let the dough rise slowly "
         "in a cool kitchen.")
VACUUM = "PostgreSQL autovacuum reclaims storage held by dead tuples on busy tables."
RYE = "Rye bread needs a long, cold proof; the crumb stays dense and moist."
QUERY = {"query": "how do I bake sourdough bread", "k": 3}


def search(base: str, key: str, body: dict) -> dict:
    status, answer = Client(base, key).post("/search", body)
    assert status == 200, answer
    return answer


def texts(answer: dict, document_id: str) -> list[str]:
    return [r["text"] for r in answer["results"] if r["document_id"] == document_id]


def delete_document(tenant, document_id: str) -> None:
    status, body = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/{document_id}")
    assert status == 200, body


@pytest.fixture(scope="module")
async def tenant(host_a, admin):
    tenant = new_tenant(host_a, admin, prefix="hosts")
    put_document(tenant, "bread", BREAD)
    put_document(tenant, "vacuum", VACUUM)
    for doc in await asyncio.gather(wait_document(tenant, "bread"), wait_document(tenant, "vacuum")):
        assert doc["status"] == "ready", doc
    return tenant


async def test_host_b_never_serves_what_host_a_replaced_or_deleted_and_sees_additions_at_once(
        host_a, host_b, tenant):
    b = host_b.url("search")
    assert host_b.kv_url == host_a.kv_url and host_b.dsn == host_a.dsn
    first = search(b, tenant.key, QUERY)
    assert (first["cache"], search(b, tenant.key, QUERY)["cache"]) == ("none", "exact")
    assert search(host_a.url("search"), tenant.key, QUERY)["cache"] == "exact"  # B's answer, in the shared KV
    vacuum_query = {"query": "autovacuum dead tuples", "k": 3}
    search(b, tenant.key, vacuum_query)
    assert texts(search(b, tenant.key, vacuum_query), "vacuum") == [VACUUM]

    server = redis.Redis.from_url(host_a.kv_url)
    try:
        keys = {k.decode() for k in server.scan_iter(match="cache:*")}
    finally:
        server.close()
    assert any(k.startswith("cache:result:") for k in keys), keys
    assert f"cache:seq:{tenant.entity_id}" in keys

    # replaced through A: B's next answer holds the new text only
    put_document(tenant, "bread", RYE)
    assert (await wait_document(tenant, "bread", version=2))["status"] == "ready"
    after = search(b, tenant.key, QUERY)
    assert after["cache"] == "none"
    assert texts(after, "bread") == [RYE]
    assert search(b, tenant.key, QUERY)["cache"] == "exact"

    # deleted through A: gone from B's answers, cached or not
    delete_document(tenant, "vacuum")
    for _ in range(2):
        assert texts(search(b, tenant.key, vacuum_query), "vacuum") == []

    # added through A: B finds it with the first search after it is ready, over HTTP and MCP
    put_document(tenant, "kiln", "A kiln fires clay pots at twelve hundred degrees.")
    assert (await wait_document(tenant, "kiln"))["status"] == "ready"
    kiln = {"query": "kiln clay pots", "k": 3}
    assert texts(search(b, tenant.key, kiln), "kiln")
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tenant.key}"}, timeout=60) as http:
        async with streamable_http_client(host_b.url("mcp") + "/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("search", {"query": "kiln clay pots", "k": 3})
    assert not result.is_error, result
    assert "kiln" in json.dumps([c.model_dump() for c in result.content])


async def test_redis_restarting_costs_the_caches_and_nothing_stale_is_served_after(host_a, host_b, tenant):
    """While Redis is down, searches answer uncached ("bypassed"). It comes back empty and its
    sequences start again from 0: an in-process copy made before, at the same sequence value,
    must not answer again (the KV's epoch changed with it)."""
    b = host_b.url("search")
    query = {"query": "bread starter proof", "k": 3}
    search(b, tenant.key, query)
    before = search(b, tenant.key, query)
    assert before["cache"] == "exact"      # and B keeps a copy of it in its process
    server = redis.Redis.from_url(host_a.kv_url)
    sequence = int(server.get(f"cache:seq:{tenant.entity_id}"))
    server.close()

    assert host_a.redis_server is not None
    host_a.redis_server.stop()
    try:
        for base in (b, host_a.url("search")):
            down = search(base, tenant.key, query)
            assert down["cache"] == "bypassed"
            assert texts(down, "bread") == texts(before, "bread")
    finally:
        host_a.redis_server.start()

    # the document changes once Redis is back (ingestion waits for the KV to invalidate), and the
    # entity's sequence comes back round to the value B's copy was made at
    version = (await wait_document(tenant, "bread"))["version"]
    put_document(tenant, "bread", "Spelt bread with a young starter proofs in four hours.")
    assert (await wait_document(tenant, "bread", version=version + 1))["status"] == "ready"
    server = redis.Redis.from_url(host_a.kv_url)
    try:
        assert int(server.get(f"cache:seq:{tenant.entity_id}")) <= sequence
        server.set(f"cache:seq:{tenant.entity_id}", sequence)
    finally:
        server.close()
    after = search(b, tenant.key, query)
    assert after["cache"] == "none"
    assert texts(after, "bread") == ["Spelt bread with a young starter proofs in four hours."]


async def test_a_keys_rate_limit_holds_across_both_hosts(host_a, host_b, tenant):
    rate = 20.0  # burst 2 × rate: a process of its own would let each host take a full burst
    for stack in (host_a, host_b):
        stack.stop_worker("search")
        stack.start_worker("search", extra_env={"EDGEINDEX_VAR_RATE_LIMIT_PER_SECOND": str(rate)})
    for stack in (host_a, host_b):
        stack.wait_healthy("search")
    clients = [Client(host_a.url("search"), tenant.key), Client(host_b.url("search"), tenant.key)]
    loop = asyncio.get_running_loop()
    started, answered, limited = loop.time(), 0, 0
    for i in range(int(6 * rate)):
        status, body = clients[i % 2].post("/search", {"query": f"bread {i % 3}", "k": 1})
        if status == 200:
            answered += 1
        else:
            assert status == 429, body
            limited += 1
    elapsed = loop.time() - started
    allowed = 2 * rate + rate * elapsed   # one bucket: its burst, then the rate
    assert limited > 0
    assert answered <= allowed + 2, (answered, elapsed)
