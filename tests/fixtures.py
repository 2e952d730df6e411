"""The stack fixtures, defined once for every kind of test that needs a stack. Each kind's conftest
takes a set with its own scope: the integration tests share one stack for the whole session; the
end-to-end tests get one for their package, stopped before the integration tests start (moto's
server keeps its state per process, so two live stacks in one test process would share queues)."""

from __future__ import annotations

import pytest
from edgeindex.bindings.database import Database
from edgeindex.testing.worker import WorkerHooks

from .helpers import Client, new_tenant, running_stack


def stack_fixtures(scope: str):
    """(stack, db, upload_admin, search_url, tenant) fixtures whose stack lives for ``scope``."""

    @pytest.fixture(scope=scope)
    def stack(tmp_path_factory):
        # hold points on: race tests stop one writer at a named point while another completes
        with running_stack(tmp_path_factory.mktemp("state"), hooks=WorkerHooks(holds=True)) as started:
            yield started

    @pytest.fixture(scope=scope)
    async def db(stack):
        database = Database(stack.dsn, max_size=4)
        await database.open()
        yield database
        await database.close()

    @pytest.fixture(scope=scope)
    def upload_admin(stack) -> Client:
        return Client(stack.url("upload"), stack.admin_key)

    @pytest.fixture(scope=scope)
    def search_url(stack) -> str:
        return stack.url("search")

    @pytest.fixture
    def tenant(stack, upload_admin):
        return new_tenant(stack, upload_admin)

    return stack, db, upload_admin, search_url, tenant
