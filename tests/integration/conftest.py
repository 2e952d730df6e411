"""The integration tests' one real stack, shared by the whole session (embedded Postgres, moto
server over HTTP, diskcache, the real embedding model, three worker processes). No test here
restarts or reconfigures it: those that must are in tests/e2e with a stack of their own."""

from ..fixtures import db, search_url, stack, tenant, upload_admin  # noqa: F401  (fixtures, by name)
