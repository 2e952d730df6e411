"""The integration tests' one real stack, shared by the whole session (embedded Postgres, moto
server over HTTP, diskcache, the real embedding model, three worker processes). No test here
restarts or reconfigures it: those that must are in tests/e2e with a stack of their own."""

from __future__ import annotations

import pytest

from edgeindex.bindings.database import Database

from ..helpers import Client, new_tenant, running_stack


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("state")) as started:
        yield started


@pytest.fixture(scope="session")
async def db(stack):
    database = Database(stack.dsn, max_size=4)
    await database.open()
    yield database
    await database.close()


@pytest.fixture(scope="session")
def upload_admin(stack) -> Client:
    return Client(stack.url("upload"), stack.admin_key)


@pytest.fixture(scope="session")
def search_url(stack) -> str:
    return stack.url("search")


@pytest.fixture
def tenant(stack, upload_admin):
    return new_tenant(stack, upload_admin)
