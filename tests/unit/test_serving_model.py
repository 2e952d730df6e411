"""Which model a worker embeds with once the database names its serving model (a cutover changes it)."""

from __future__ import annotations

import pytest
from edgeindex.bindings.ai import serving_settings
from edgeindex.config import AIService
from edgeindex.errors import ConfigError
from edgeindex.runtime.serving_model import DEFAULT_POLL_SECONDS, poll_seconds

E5_ID = "intfloat/multilingual-e5-small"


def test_a_local_worker_follows_the_packaged_model_the_database_serves():
    configured = AIService(model="all-MiniLM-L6-v2")
    assert serving_settings(configured, (E5_ID, 384)).model == "multilingual-e5-small"
    assert serving_settings(configured, ("sentence-transformers/all-MiniLM-L6-v2", 384)) is configured
    assert serving_settings(configured, None) is configured   # a new database: the configured model


def test_a_model_that_is_not_packaged_or_a_remote_provider_is_not_swapped():
    configured = AIService(model="all-MiniLM-L6-v2")
    assert serving_settings(configured, ("someone/else", 384)) is configured
    remote = AIService(provider="openai", base_url="http://127.0.0.1:1", model="text-embed", dimension=384)
    assert serving_settings(remote, (E5_ID, 384)) is remote


def test_the_poll_interval_is_checked():
    assert poll_seconds({}) == DEFAULT_POLL_SECONDS
    assert poll_seconds({"EDGEINDEX_MODEL_POLL_SECONDS": "0.5"}) == 0.5
    for bad in ("0", "soon", "-1"):
        with pytest.raises(ConfigError, match="EDGEINDEX_MODEL_POLL_SECONDS"):
            poll_seconds({"EDGEINDEX_MODEL_POLL_SECONDS": bad})


def test_a_worker_names_its_old_model_until_the_new_services_are_in_and_keeps_it_if_they_fail(monkeypatch):
    import asyncio
    from types import SimpleNamespace

    from edgeindex.env import Env
    from edgeindex.runtime import serving_model

    old_ai = SimpleNamespace(embedder=SimpleNamespace(model_id="sentence-transformers/all-MiniLM-L6-v2"))

    class Module:
        fail = True

        async def startup(self, staged):
            # the worker's own env (its /health, the next poll) names the old model while the new builds
            assert env.AI is old_ai and env.bindings["AI"] is old_ai and staged.AI is not old_ai
            if self.fail:
                raise RuntimeError("the new model's services could not be built")
            return ("services on", staged.AI)

    monkeypatch.setattr(serving_model, "AI", lambda settings: SimpleNamespace(embedder=SimpleNamespace(model_id=settings)))
    monkeypatch.setattr(serving_model, "PgVectorIndex", lambda db, name, **kw: f"cache of {kw['model_id']}")
    worker = SimpleNamespace(vars={}, ai=SimpleNamespace(binding="AI"),
                             vectorize=[SimpleNamespace(binding="SEMANTIC_CACHE", index_name="semantic")])
    env, module = Env("search", config=None, worker=worker), Module()
    env.bind("AI", old_ai)
    env.bind("SEMANTIC_CACHE", "old cache")
    services = serving_model.Services("old services")
    follower = serving_model.ServingModelFollower(env, module, services, db=None, every=1.0)
    with pytest.raises(RuntimeError):
        asyncio.run(follower.switch(E5_ID, (E5_ID, 384)))
    assert env.bindings == {"AI": old_ai, "SEMANTIC_CACHE": "old cache"} and env.AI is old_ai
    assert follower.model_id == old_ai.embedder.model_id   # so the next poll switches again
    assert services.current == "old services"
    module.fail = False
    asyncio.run(follower.switch(E5_ID, (E5_ID, 384)))
    assert follower.model_id == E5_ID and env.bindings["SEMANTIC_CACHE"] == f"cache of {E5_ID}"
    assert services.current == ("services on", env.AI) and env.bindings["AI"] is env.AI
