"""Upload worker: presigned uploads, direct uploads, document status, tenancy admin."""

from __future__ import annotations

import os

from edgeindex import tenancy
from edgeindex.runtime.router import Router

router = Router()


async def startup(env) -> None:
    if secret := os.environ.get("EDGEINDEX_ADMIN_KEY"):
        await tenancy.ensure_admin_key(env.DB, secret)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)
