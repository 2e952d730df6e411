"""The stack fixtures, one definition for every kind that needs a stack (each kind's conftest imports
them, so tests/integration and tests/e2e each get a session stack of their own)."""

from __future__ import annotations

import pytest
from edgeindex.bindings.database import Database

from .helpers import Client, new_tenant, running_stack


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
