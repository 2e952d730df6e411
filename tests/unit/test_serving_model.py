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
