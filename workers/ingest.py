"""Ingest worker: consumes object-created events and runs the ingestion workflow per document version."""

from __future__ import annotations

from edgeindex.runtime.router import Router

router = Router()


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)


async def queue(batch, env, ctx):
    for message in batch.messages:
        message.ack()
