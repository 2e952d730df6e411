"""The integration tests' one real stack, shared by the whole session (embedded Postgres, moto
server over HTTP, diskcache, the real embedding model, three worker processes). No test here
restarts or reconfigures it: those that must are in tests/e2e with a stack of their own."""

from ..fixtures import stack_fixtures

stack, db, upload_admin, search_url, tenant = stack_fixtures("session")
