"""The CLI says where things are: ``edgeindex dev``'s ready message and the "no API key" error."""

from __future__ import annotations

from pathlib import Path

from edgeindex import cli
from edgeindex import config as config_module

ROOT = Path(__file__).resolve().parents[2]


class ReadyStack:
    """What ``ready_message`` reads of a started DevStack."""

    def __init__(self, state: Path, *, key_from_environment: bool = False) -> None:
        self.worker_names = ["upload", "ingest", "search", "mcp"]
        self.ports: dict[str, int] = {}
        self.s3_endpoint = "http://127.0.0.1:45001"
        self.admin_key = "ei_admin_secret"
        self.admin_key_file = None if key_from_environment else state / "admin_key"
        self.dsn = "postgresql://postgres:hunter2@127.0.0.1:45002/edgeindex"

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{8787 + self.worker_names.index(name)}"


def _config(state: Path) -> config_module.Config:
    return config_module.load(ROOT / "wrangler.toml", environ={"EDGEINDEX_STATE_DIR": str(state)})


def test_dev_ready_message_names_state_key_file_dsn_and_mcp_url(tmp_path):
    state = tmp_path / "state"
    text = "\n".join(cli.ready_message(ReadyStack(state), _config(state)))
    assert f"state folder: {state}" in text
    assert f"admin key: ei_admin_secret   (file: {state / 'admin_key'})" in text
    assert "postgres: postgresql://postgres:***@127.0.0.1:45002/edgeindex" in text and "hunter2" not in text
    assert "mcp url: http://127.0.0.1:8790/mcp" in text
    for name in ("upload", "ingest", "search", "mcp"):
        assert f"  {name:<7} http://127.0.0.1:" in text


def test_dev_ready_message_names_no_file_for_a_key_from_the_environment(tmp_path):
    state = tmp_path / "state"
    text = "\n".join(cli.ready_message(ReadyStack(state, key_from_environment=True), _config(state)))
    assert "(from $EDGEINDEX_ADMIN_KEY)" in text and "admin_key" not in text.split("admin key:")[1].split("\n")[0]


def test_no_api_key_error_names_the_key_file_it_looked_for(tmp_path, capsys, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("EDGEINDEX_STATE_DIR", str(state))
    monkeypatch.setenv("EDGEINDEX_CONFIG", str(ROOT / "wrangler.toml"))
    for name in ("EDGEINDEX_API_KEY", "EDGEINDEX_ADMIN_KEY", "EDGEINDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["status", "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"no API key: pass --api-key or set EDGEINDEX_API_KEY (the dev stack's key file {state / 'admin_key'} " \
           "does not exist)" in err


def test_no_api_key_error_outside_a_project_says_there_is_no_key_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("EDGEINDEX_API_KEY", "EDGEINDEX_ADMIN_KEY", "EDGEINDEX_URL", "EDGEINDEX_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    code = cli.main(["status", "--json"])
    assert code == 2 and "no wrangler.toml here, so no dev stack's key file to read" in capsys.readouterr().err
