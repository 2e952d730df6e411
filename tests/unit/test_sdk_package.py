"""The SDK package stands alone: no torch, no server code; its request models follow the server's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_importing_the_client_pulls_neither_torch_nor_the_server():
    code = ("import sys, json, edgeindex_client, edgeindex_client.models, edgeindex_client.async_client; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'edgeindex', 'sentence_transformers', 'numpy', 'psycopg', 'aiohttp', 'boto3'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize(("client_model", "server_model"), [
    ("SearchRequest", "edgeindex.trajectories.service:TrajectorySearchRequest"),  # what POST /search takes
    ("ExpandRequest", "edgeindex.trajectories.service:ExpandRequest"),
    ("SearchFilters", "edgeindex.search.request:Filters"),
    ("SearchInclude", "edgeindex.search.request:Include"),
    ("UploadRequest", "edgeindex.uploads.models:UploadRequest"),
    ("EntityCreate", "edgeindex.tenancy:EntityRequest"),
    ("KeyCreate", "edgeindex.tenancy:KeyRequest"),
])
def test_client_request_models_have_the_servers_fields(client_model, server_model):
    import importlib

    from edgeindex_client import models

    module, name = server_model.split(":")
    server = getattr(importlib.import_module(module), name)
    assert set(getattr(models, client_model).model_fields) == set(server.model_fields)


def test_document_ids_from_paths(tmp_path):
    from edgeindex_client.files import collect_files, document_id_for

    (tmp_path / "a dir").mkdir()
    (tmp_path / "a dir" / "Ünïcode note.md").write_text("x")
    (tmp_path / "top.txt").write_text("y")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("z")
    files = collect_files([tmp_path])
    # ids are the paths relative to the folder uploaded, as README and docs/cli.md promise
    assert sorted(f.document_id for f in files) == ["a dir/Ünïcode note.md", "top.txt"]
    assert [f.document_id for f in collect_files([str(tmp_path / "*.txt")])] == ["top.txt"]
    # a glob names files from the folder before its wildcard, like a walk of that folder
    assert sorted(f.document_id for f in collect_files([str(tmp_path / "**" / "*.*")])) == [
        "a dir/Ünïcode note.md", "top.txt"]
    assert [f.document_id for f in collect_files([tmp_path / "a dir"], prefix="kb/")] == ["kb/Ünïcode note.md"]
    long = document_id_for(tmp_path / ("é" * 300 + ".md"), tmp_path)
    assert len(long.encode()) <= 512 and long.endswith("é.md")
    assert long != document_id_for(tmp_path / ("x" + "é" * 300 + ".md"), tmp_path)
