"""wrangler.toml checking: every mistake names the file, the key and what was expected."""

from pathlib import Path

import pytest
from edgeindex import config as cfg
from edgeindex.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def load_with(tmp_path, text: str, environ=None):
    path = tmp_path / "wrangler.toml"
    path.write_text(text)
    return cfg.load(path, environ=environ or {})


BASE = """
name = "t"
[workers.search]
main = "workers/search.py"
port = 9001
"""


def test_project_file_is_valid():
    config = cfg.load(ROOT / "wrangler.toml", environ={})
    assert set(config.workers) == {"upload", "ingest", "search", "mcp"}
    ingest = config.workers["ingest"]
    assert ingest.queues.consumers[0].dead_letter_queue == "edgeindex-ingest-dlq"
    assert config.queue_names() == ["edgeindex-ingest", "edgeindex-ingest-dlq"]


def test_unknown_binding_type_is_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE + 'd1_databases = [{ binding = "D1" }]\n')
    assert "wrangler.toml" in err.value.message
    assert err.value.key == "workers.search.d1_databases"
    assert "unknown key" in err.value.message


def test_missing_field_is_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE + 'r2_buckets = [{ binding = "BUCKET" }]\n')
    assert err.value.key == "workers.search.r2_buckets.0.bucket_name"
    assert "missing" in err.value.message


def test_bad_value_is_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE.replace("9001", '"not-a-port"'))
    assert err.value.key == "workers.search.port"
    assert "not-a-port" in err.value.message


def test_bad_batch_size(tmp_path):
    text = BASE + '[[workers.search.queues.consumers]]\nqueue = "q1"\nmax_batch_size = 1000\n'
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, text)
    assert err.value.key == "workers.search.queues.consumers.0.max_batch_size"


def test_lowercase_binding_name_rejected(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE + 'kv_namespaces = [{ binding = "kv", id = "cache" }]\n')
    assert err.value.key == "workers.search.kv_namespaces.0.binding"


def test_duplicate_ports_rejected(tmp_path):
    text = BASE + '[workers.upload]\nmain = "workers/upload.py"\nport = 9001\n'
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, text)
    assert "9001" in err.value.message


def test_invalid_toml(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, "name = ")
    assert "not valid TOML" in err.value.message


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as err:
        cfg.load(tmp_path / "nope.toml")
    assert "file not found" in err.value.message


def test_environment_overrides(tmp_path):
    config = load_with(tmp_path, BASE + 'vars = { MAX_K = 100 }\n', environ={
        "EDGEINDEX_S3_ENDPOINT": "http://minio:9000", "EDGEINDEX_DATABASE_URL": "postgresql://db/x",
        "EDGEINDEX_SEARCH_PORT": "9100", "EDGEINDEX_VAR_MAX_K": "50"})
    assert config.services.s3.endpoint == "http://minio:9000"
    assert config.services.database.dsn == "postgresql://db/x"
    assert config.workers["search"].port == 9100
    assert config.workers["search"].vars["MAX_K"] == "50"


def test_bad_override_is_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE, environ={"EDGEINDEX_SEARCH_PORT": "99999"})
    assert err.value.key == "workers.search.port"


def test_remote_ai_needs_url(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE + "", environ={"EDGEINDEX_AI_PROVIDER": "openai"})
    assert err.value.key.startswith("services.ai")
    assert "base_url" in err.value.message


def test_notification_must_name_known_queue(tmp_path):
    text = BASE + 'r2_buckets = [{ binding = "B", bucket_name = "docs" }]\n' \
        '[[event_notifications]]\nbucket = "docs"\nqueue = "nowhere"\n'
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, text)
    assert "nowhere" in err.value.message


def test_embedding_model_languages_local_declared_or_any(tmp_path):
    """The router's "language the model does not know" needs the model's languages: the local
    model's own (English), a remote provider's as declared (file or EDGEINDEX_AI_LANGUAGES), else any."""
    from edgeindex.bindings.ai import model_languages

    assert model_languages(load_with(tmp_path, BASE).services.ai) == {"en"}
    remote = BASE + '[services.ai]\nprovider = "openai"\nbase_url = "http://llm"\ndimension = 8\n'
    assert model_languages(load_with(tmp_path, remote).services.ai) == {"*"}
    declared = remote + 'languages = ["en", "DE"]\n'
    assert model_languages(load_with(tmp_path, declared).services.ai) == {"en", "de"}
    env = load_with(tmp_path, remote, environ={"EDGEINDEX_AI_LANGUAGES": "fr, es"})
    assert model_languages(env.services.ai) == {"fr", "es"}
    # the local model ships English only, whatever a file claims
    assert model_languages(load_with(tmp_path, BASE + '[services.ai]\nlanguages = ["*"]\n').services.ai) == {"en"}


def test_local_model_choice_states_its_identity_and_languages(tmp_path):
    """``[services.ai] model`` picks a packaged model: its id and dimension (pinned by the database) and its
    languages (the router's) are known without loading it; a name the provider does not ship is an error."""
    from edgeindex.bindings.ai import model_identity, model_languages
    from edgeindex.errors import BindingError

    assert model_identity(load_with(tmp_path, BASE).services.ai) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    e5 = load_with(tmp_path, BASE + '[services.ai]\nmodel = "multilingual-e5-small"\n').services.ai
    assert model_identity(e5) == ("intfloat/multilingual-e5-small", 384)
    assert model_languages(e5) == {"*"}
    by_env = load_with(tmp_path, BASE, environ={"EDGEINDEX_AI_MODEL": "intfloat/multilingual-e5-small"})
    assert model_identity(by_env.services.ai)[0] == "intfloat/multilingual-e5-small"
    with pytest.raises(BindingError, match="multilingual-e5-small"):
        model_identity(load_with(tmp_path, BASE + '[services.ai]\nmodel = "bge-m3"\n').services.ai)


SHARED = BASE.replace('port = 9001', 'port = 9001\nvars = { MAX_K = 100, CACHE_TTL_SECONDS = 60 }') + """
[workers.mcp]
main = "workers/mcp.py"
port = 9002
vars_from = "search"
vars = { MAX_K = 20 }
"""


def test_vars_from_takes_another_workers_vars_then_its_own(tmp_path):
    config = load_with(tmp_path, SHARED, environ={"EDGEINDEX_VAR_CACHE_TTL_SECONDS": "5"})
    assert config.workers["mcp"].vars == {"MAX_K": 20, "CACHE_TTL_SECONDS": "5"}
    assert config.workers["search"].vars == {"MAX_K": 100, "CACHE_TTL_SECONDS": "5"}


def test_project_mcp_serves_the_search_workers_vars():
    config = cfg.load(ROOT / "wrangler.toml", environ={})
    search, mcp = config.workers["search"].vars, config.workers["mcp"].vars
    assert {k: v for k, v in mcp.items() if k != "MAX_UPLOAD_BYTES"} == search


@pytest.mark.parametrize("source", ['"nobody"', '"mcp"'])
def test_vars_from_must_name_another_worker(tmp_path, source):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, SHARED.replace('vars_from = "search"', f"vars_from = {source}"))
    assert err.value.key == "workers.mcp.vars_from"


def test_a_workers_vars_are_checked_against_its_schema(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE.replace('port = 9001', 'port = 9001\nvars = { MAX_KK = 10 }'))
    assert err.value.key == "workers.search.vars.MAX_KK" and "unknown key" in err.value.message
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE.replace('port = 9001', 'port = 9001\nvars = { MAX_K = 0 }'))
    assert err.value.key == "workers.search.vars.MAX_K"
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE, environ={"EDGEINDEX_VAR_ROUTER_DEFAULT": "sometimes"})
    assert err.value.key == "workers.search.vars.ROUTER_DEFAULT" and "sometimes" in err.value.message


def test_hnsw_ef_search_is_checked_and_typed(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_with(tmp_path, BASE, environ={"EDGEINDEX_VAR_HNSW_EF_SEARCH": "5"})
    assert err.value.key == "workers.search.vars.HNSW_EF_SEARCH"
    config = load_with(tmp_path, BASE, environ={"EDGEINDEX_VAR_HNSW_EF_SEARCH": "120"})
    assert config.checked_vars["search"].HNSW_EF_SEARCH == 120
    from edgeindex.search import defaults
    # the var's default is the engine's own (worker_vars cannot import the search package: a loop)
    assert load_with(tmp_path, BASE).checked_vars["search"].HNSW_EF_SEARCH == defaults.HNSW_EF_SEARCH


def test_vars_take_their_defaults_and_overrides_of_keys_the_file_leaves_out(tmp_path):
    config = load_with(tmp_path, BASE, environ={"EDGEINDEX_VAR_CACHE_TTL_SECONDS": "12.5"})
    checked = config.checked_vars["search"]
    assert checked.CACHE_TTL_SECONDS == 12.5 and checked.MAX_K == 100 and checked.ROUTER_DEFAULT == "auto"


def test_a_worker_of_the_deployments_own_keeps_free_form_vars(tmp_path):
    text = BASE.replace('main = "workers/search.py"', 'main = "custom/echo.py"').replace(
        'port = 9001', 'port = 9001\nvars = { ANYTHING = "x" }')
    config = load_with(tmp_path, text)
    assert config.workers["search"].vars == {"ANYTHING": "x"} and "search" not in config.checked_vars
