"""Search worker: what agents call."""

from __future__ import annotations

from edgeindex.runtime.router import Router

router = Router()


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)
