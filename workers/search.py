"""Search worker: what agents call. ``POST /search`` (see edgeindex.search.service)."""

from __future__ import annotations

import os

# Query embedding is one short text at a time: one OpenMP/MKL thread is as fast, and on a
# busy 2-core box it keeps p99 at ~30 ms where two threads spike to ~700 ms (measured, see
# the report of issue 4). It has to be in the environment before torch loads, which happens
# when the AI binding is built, after this module is imported; an operator's value wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from edgeindex import tenancy  # noqa: E402
from edgeindex.runtime.router import Router, read_json  # noqa: E402
from edgeindex.search import service  # noqa: E402
from edgeindex.search.rerank import HTTPReranker  # noqa: E402

router = Router()
MAX_BODY_BYTES = 256_000


async def startup(env) -> None:
    service.tune_for_queries(env.AI.embedder)
    # The reranker is optional: a binding only when its URL var is set.
    url = str(env.worker.vars.get("RERANK_URL", "") or "")
    if url:
        env.bind("RERANKER", HTTPReranker(url, model=str(env.worker.vars.get("RERANK_MODEL", "") or "")))


@router.post("/search")
async def search(request, env, ctx):
    principal = await tenancy.authenticate(env.DB, request.headers)
    body = await read_json(request, max_bytes=MAX_BODY_BYTES)
    return await service.search(env, ctx, principal, body)


async def fetch(request, env, ctx):
    return await router.fetch(request, env, ctx)
