"""``edgeindex upload | search | status | keys | entities`` against the shared stack."""

from __future__ import annotations

import json
import time

from edgeindex import cli

from ..helpers import put_document, wait_document
from .test_sdk import FACTS, unique


def run(capsys, stack, key: str, *argv: str) -> tuple[int, str]:
    code = cli.main([*argv, "--upload-url", stack.url("upload"), "--search-url", stack.url("search"),
                     "--api-key", key])
    return code, capsys.readouterr().out


def test_cli_tenancy_upload_search_and_status(stack, capsys, tmp_path):
    admin = stack.admin_key
    entity = unique("cli")
    code, out = run(capsys, stack, admin, "entities", "create", entity, "--kind", "group", "--name", "CLI", "--json")
    assert code == 0 and json.loads(out)["kind"] == "group"
    code, out = run(capsys, stack, admin, "keys", "create", "cli-key", "--entity", entity, "--json")
    key = json.loads(out)
    assert code == 0 and key["entity_ids"] == [entity]
    code, out = run(capsys, stack, admin, "keys", "list", "--json")
    assert key["id"] in [k["id"] for k in json.loads(out)]

    folder = tmp_path / "notes"
    (folder / "deck").mkdir(parents=True)
    for name, text in FACTS.items():
        (folder / ("deck" if name != "galley" else "") / f"{name}.txt").write_text(text)
    code, out = run(capsys, stack, key["key"], "upload", str(folder), "--entity", entity, "--concurrency", "2",
                    "--tags", "ship", "--wait", "--wait-timeout", "120", "--json")
    summary = json.loads(out)
    assert code == 0, summary
    assert (summary["files"], summary["uploaded"], summary["unchanged"], summary["failed"]) == (3, 3, 0, 0)
    assert (summary["ready"], summary["ingest_failed"], summary["not_ready"]) == (3, 0, 0)
    code, out = run(capsys, stack, key["key"], "upload", str(folder / "**" / "*.txt"), "--entity", entity, "--json")
    again = json.loads(out)
    assert (again["files"], again["uploaded"], again["unchanged"]) == (3, 0, 3)  # same bytes: skipped

    code, out = run(capsys, stack, key["key"], "search", "thermostat alarm of the freezer", "--entity", entity,
                    "-k", "2", "--tag", "ship", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["results"][0]["document_id"] == "galley.txt"
    code, out = run(capsys, stack, key["key"], "search", "bilge pump service", "--entity", entity)
    assert code == 0 and "deck/pumps.txt" in out and "ninety days" in out  # the table

    code, out = run(capsys, stack, key["key"], "status", "--entity", entity, "--json")
    assert json.loads(out)["documents"] == {"ready": 3}
    code, out = run(capsys, stack, admin, "keys", "revoke", key["id"])
    assert code == 0
    # workers reuse a key lookup for up to 2 s, so the revocation bites within a bound, not at once
    deadline = time.monotonic() + 15
    while True:
        code = cli.main(["search", "pump", "--entity", entity, "--upload-url", stack.url("upload"),
                         "--search-url", stack.url("search"), "--api-key", key["key"], "--json"])
        captured = capsys.readouterr()
        if code != 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert code == 2 and "401 unauthorized" in captured.err


async def test_cli_search_table_prints_square_brackets_as_written(stack, capsys, tenant, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # a passage column wide enough that no word folds
    put_document(tenant, "brackets.md", "Set [workers.search] port in wrangler.toml.", content_type="text/markdown")
    await wait_document(tenant, "brackets.md")
    code, out = run(capsys, stack, tenant.key, "search", "workers search port", "--entity", tenant.entity_id,
                    "--no-cache")
    assert code == 0, out
    assert "brackets.md" in out and "Set [workers.search] port" in out, out


def test_cli_status_lists_all_four_workers(stack, capsys, monkeypatch):
    monkeypatch.setenv("EDGEINDEX_INGEST_URL", stack.url("ingest"))
    monkeypatch.setenv("EDGEINDEX_MCP_URL", stack.url("mcp") + "/mcp")  # the endpoint, as `edgeindex mcp` takes it
    code, out = run(capsys, stack, stack.admin_key, "status", "--json")
    rows = json.loads(out)
    assert [(r["worker"], r["url"], r["status"]) for r in rows] == [
        (name, stack.url(name), "ok") for name in ("upload", "ingest", "search", "mcp")]
    assert code == 0


async def test_cli_search_steps_a_trajectory_and_shows_it(stack, capsys, tenant):
    for name in ("pumps", "lights"):
        put_document(tenant, f"{name}.txt", FACTS[name])
    for name in ("pumps", "lights"):
        await wait_document(tenant, f"{name}.txt")
    t = unique("t-cli-")
    answers = []
    for _ in range(2):
        code, out = run(capsys, stack, tenant.key, "search", "ship checks", "--entity", tenant.entity_id, "-k", "1",
                        "--trajectory", t, "--json")
        assert code == 0, out
        answers.append(json.loads(out))
    assert answers[0]["results"][0]["chunk_id"] != answers[1]["results"][0]["chunk_id"]
    assert answers[1]["trajectory"]["step"] == 2
    code, out = run(capsys, stack, tenant.key, "search", "ship checks", "--entity", tenant.entity_id, "-k", "1",
                    "--trajectory", t, "--seen", "include")
    assert code == 0 and f"trajectory {t}: step 3, novelty 0.00 of chunks" in out, out
    code, out = run(capsys, stack, tenant.key, "trajectory", "show", t, "--json")
    assert code == 0 and [q["step"] for q in json.loads(out)["queries"]] == [1, 2, 3]
    code, out = run(capsys, stack, tenant.key, "trajectory", "delete", t)
    assert code == 0 and "deleted" in out
    code, out = run(capsys, stack, tenant.key, "trajectory", "show", t)
    assert code == 2


async def test_cli_changes_and_search_as_of_show_an_earlier_version(stack, capsys, tenant):
    name = unique("menu-") + ".txt"
    for text in ("Lunch is soup and bread on Mondays.", "Lunch is curry and rice on Mondays."):
        version = put_document(tenant, name, text)["version"]
        await wait_document(tenant, name, version=version)
    code, out = run(capsys, stack, tenant.key, "changes", tenant.entity_id, name, "--since", "1")
    assert code == 0, out
    out = " ".join(out.split())  # the console wraps long lines at its width
    assert "version 1 → version 2: 0 added, 0 removed, 1 changed" in out, out
    assert "soup and bread" in out and "curry and rice" in out
    code, out = run(capsys, stack, tenant.key, "changes", tenant.entity_id, name, "--since", "1", "--json")
    assert code == 0 and json.loads(out)["changed"][0]["previous"]["text"] == "Lunch is soup and bread on Mondays."
    versions = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/{name}/versions")[1]["versions"]
    code, out = run(capsys, stack, tenant.key, "search", "what is for lunch", "--entity", tenant.entity_id,
                    "--document", name, "--as-of", versions[0]["live_from"], "--json")
    assert code == 0 and [r["text"] for r in json.loads(out)["results"]] == ["Lunch is soup and bread on Mondays."]
