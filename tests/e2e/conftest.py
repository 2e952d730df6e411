"""End-to-end tests that start, stop, kill or reconfigure processes: they get a stack of their
own (separate from the integration tests' shared one), or start one themselves."""

from ..fixtures import db, search_url, stack, tenant, upload_admin  # noqa: F401  (fixtures, by name)
