"""A database that is restarting or out of reach answers 503 with Retry-After, never a 500 (chaos: restart-db)."""

from __future__ import annotations

import aiohttp
import psycopg
import pytest
from edgeindex.runtime.http import Routes
from psycopg_pool import PoolTimeout

from .test_http import _serve


@pytest.mark.parametrize("error", [psycopg.OperationalError("server closed the connection unexpectedly"),
                                   psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
                                   PoolTimeout("couldn't get a connection after 30.00 sec")])
async def test_a_database_outage_is_a_503_to_retry(error):
    routes = Routes()

    @routes.get("/db")
    async def db(request, services, ctx):
        raise error

    runner, url = await _serve(routes)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/db") as resp:
                body = await resp.json()
                assert (resp.status, body["error"], resp.headers["Retry-After"]) == (503, "unavailable", "1")
                assert body["request_id"] == resp.headers["X-Request-Id"]
    finally:
        await runner.cleanup()
