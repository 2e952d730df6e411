"""End-to-end tests that start, stop, kill or reconfigure processes: they get a stack of their
own (separate from the integration tests' shared one), or start one themselves."""

from ..fixtures import stack_fixtures

stack, db, upload_admin, search_url, tenant = stack_fixtures("package")
