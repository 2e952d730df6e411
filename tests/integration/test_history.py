"""Document history against the real stack (upload → ingest → Postgres → search): every version a
document had is kept within the entity's retention, ``changes`` answers what changed between two
of them chunk by chunk, a search ``as_of`` a time sees the documents as they were then, and deleting a
document deletes its history."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..helpers import Tenant, chunks, new_tenant, put_document, wait_document

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _ready(tenant: Tenant, document_id: str, version: int) -> dict:
    doc = asyncio.run(wait_document(tenant, document_id, version=version))
    assert doc["status"] == "ready" and doc["version"] == version, doc
    return doc


def _put(tenant: Tenant, document_id: str, text: str) -> dict:
    version = put_document(tenant, document_id, text, content_type="text/markdown")["version"]
    return _ready(tenant, document_id, version)


def _get(tenant: Tenant, path: str, status: int = 200) -> dict:
    got, body = tenant.upload.get(f"/entities/{tenant.entity_id}{path}")
    assert got == status, body
    return body


def _search(tenant: Tenant, body: dict) -> list[dict]:
    status, answer = tenant.search.post("/search", {"cache": False, "k": 100, **body})
    assert status == 200, answer
    return answer["results"]


def _versions(tenant: Tenant, document_id: str) -> dict[int, dict]:
    return {v["version"]: v for v in _get(tenant, f"/documents/{document_id}/versions")["versions"]}


def _edited_readme() -> tuple[str, str, str, str]:
    """The README with one section's paragraph replaced and a new section appended: (text, the
    paragraph replaced, its replacement, the new section)."""
    paragraphs = README.split("\n\n")
    i = max(range(len(paragraphs)), key=lambda j: len(paragraphs[j]) if not paragraphs[j].startswith(("```", "<")) else 0)
    old = paragraphs[i]
    new = "Every answer now carries the version of the document it came from, so an agent can cite it exactly."
    added = "## Retention\n\nA tenant keeps twenty replaced versions of each document for ninety days by default."
    edited = paragraphs[:i] + [new] + paragraphs[i + 1:] + [added]
    return "\n\n".join(edited), old, new, added


async def _put_async(tenant: Tenant, document_id: str, text: str) -> None:
    version = put_document(tenant, document_id, text, content_type="text/markdown")["version"]
    doc = await wait_document(tenant, document_id, version=version)
    assert doc["status"] == "ready" and doc["version"] == version, doc


async def test_changes_between_two_versions_of_a_real_document(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="hc")
    await _put_async(tenant, "readme", README)
    first = [c["content"] for c in await chunks(db, tenant.entity_id, "readme")]
    edited, old, new, added = _edited_readme()
    await _put_async(tenant, "readme", edited)
    second = [c["content"] for c in await chunks(db, tenant.entity_id, "readme")]
    changes = _get(tenant, "/documents/readme/changes?since=1")
    assert (changes["since_version"], changes["until_version"]) == (1, 2)
    new_texts = [c["text"] for c in changes["added"]] + [c["text"] for c in changes["changed"]]
    old_texts = [c["text"] for c in changes["removed"]] + [c["previous"]["text"] for c in changes["changed"]]
    assert any(new in t for t in new_texts) and any("## Retention" in t for t in new_texts)
    assert any(old[:80] in t for t in old_texts)
    assert not any(new in t for t in old_texts)
    # most of the document did not change, and what did is the edit's neighbourhood only
    assert changes["unchanged"] > 3 * (len(changes["added"]) + len(changes["changed"]))
    # each version's chunks are what ingestion stored for it, and the changes take one to the other
    everything = _get(tenant, "/documents/readme/changes?since=0")
    assert [c["text"] for c in everything["added"]] == second
    assert [c["text"] for c in _get(tenant, "/documents/readme/changes?since=0&until=1")["added"]] == first
    replayed = [c for c in first if c not in {r["text"] for r in changes["removed"]}
                and c not in {r["previous"]["text"] for r in changes["changed"]}]
    assert sorted(replayed + new_texts) == sorted(second)
    # since a time before the document existed: everything of the live version is added
    before = _get(tenant, "/documents/readme/changes?since=2000-01-01T00:00:00Z")
    assert before["since_version"] is None and before["added"] == everything["added"]


async def test_as_of_before_and_after_an_update(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="ha")
    await _put_async(tenant, "hours", "The front office opens at nine in the morning and closes at five.")
    await _put_async(tenant, "hours", "The front office opens at ten in the morning and closes at six.")
    versions = _versions(tenant, "hours")
    first, second = versions[1], versions[2]
    assert first["live_to"] == second["live_from"]
    query = {"query": "when does the front office open", "filters": {"document_ids": ["hours"]}}
    then = _search(tenant, {**query, "as_of": first["live_from"]})
    assert [(r["version"], "nine" in r["text"]) for r in then] == [(1, True)]
    just_before = (datetime.fromisoformat(second["live_from"]) - timedelta(microseconds=1)).isoformat()
    assert [r["version"] for r in _search(tenant, {**query, "as_of": just_before})] == [1]
    now = _search(tenant, {**query, "as_of": second["live_from"]})
    assert [(r["version"], "ten" in r["text"]) for r in now] == [(2, True)]
    live = _search(tenant, query)
    assert len(live) == 1 and "ten" in live[0]["text"]
    # text, vector and a blend all read the same versions
    for strategy in ("text", "vector", "hybrid"):
        got = _search(tenant, {**query, "strategy": strategy, "as_of": first["live_from"]})
        assert [r["version"] for r in got] == [1], strategy
    # before the document's first version there was nothing to find
    assert _search(tenant, {**query, "as_of": "2000-01-01T00:00:00Z"}) == []


async def test_deleting_a_document_deletes_its_history(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="hd")
    for text in ("Alpha report: revenue rose.", "Alpha report: revenue fell.", "Alpha report: revenue held."):
        version = put_document(tenant, "report", text)["version"]
        await wait_document(tenant, "report", version=version)
    where = (tenant.entity_id, "report")
    count = "SELECT count(*) AS n FROM {} WHERE entity_id = %s AND document_id = %s"
    assert (await db.fetchone(count.format("document_versions"), where))["n"] == 3
    assert (await db.fetchone(count.format("chunk_archive"), where))["n"] == 2
    status, _ = tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/report")
    assert status == 200
    assert (await db.fetchone(count.format("document_versions"), where))["n"] == 0
    assert (await db.fetchone(count.format("chunk_archive"), where))["n"] == 0
    _get(tenant, "/documents/report/changes?since=1", status=404)
    assert _search(tenant, {"query": "alpha report revenue", "as_of": datetime.now().astimezone().isoformat()}) == []


async def test_retention_drops_old_versions_and_says_so(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="hr")
    status, retention = upload_admin.put(f"/entities/{tenant.entity_id}/history", {"versions": 1})
    assert status == 200 and retention["versions"] == 1 and retention["own"] == {"versions": 1, "days": None}
    ready = []
    for word in ("first", "second", "third"):
        version = put_document(tenant, "memo", f"The {word} memo about the budget.")["version"]
        ready.append(await wait_document(tenant, "memo", version=version))
    assert sorted(_versions(tenant, "memo")) == [2, 3]
    gone = _get(tenant, "/documents/memo/changes?since=1", status=410)
    assert gone["field"] == "since"
    # a time the dropped version was live is gone too; before the document existed, everything is new
    at_first = ready[0]["updated_at"].replace("+00:00", "Z")
    assert _get(tenant, f"/documents/memo/changes?since={at_first}", status=410)["field"] == "since"
    for before in ("0", "2000-01-01T00:00:00Z"):
        everything = _get(tenant, f"/documents/memo/changes?since={before}")
        assert [c["text"] for c in everything["added"]] == ["The third memo about the budget."]
    changes = _get(tenant, "/documents/memo/changes?since=2")
    assert [(c["previous"]["text"], c["text"]) for c in changes["changed"]] == [
        ("The second memo about the budget.", "The third memo about the budget.")]
    archived = await db.fetch("SELECT content FROM chunk_archive WHERE entity_id = %s AND document_id = %s",
                              (tenant.entity_id, "memo"))
    assert [r["content"] for r in archived] == ["The second memo about the budget."]
    # no history at all: the archive empties at once, the live version stays
    status, _ = upload_admin.put(f"/entities/{tenant.entity_id}/history", {"versions": 0})
    assert status == 200
    assert sorted(_versions(tenant, "memo")) == [3]
    assert await db.fetch("SELECT 1 FROM chunk_archive WHERE entity_id = %s", (tenant.entity_id,)) == []
    # a tenant's own key may read its retention, not set it
    assert tenant.upload.put(f"/entities/{tenant.entity_id}/history", {"versions": 5})[0] == 403


# --- as_of equals a replay of the versions --------------------------------------------------------

WORDS = ["budget", "river", "contract", "engine", "harvest", "signal", "garden", "invoice", "orbit", "lantern"]
PARAGRAPH = st.lists(st.sampled_from(WORDS), min_size=4, max_size=40).map(lambda ws: "ledger " + " ".join(ws) + ".")
EDIT = st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 20), PARAGRAPH)


def _apply(paragraphs: list[str], edits: list[tuple[str, int, str]]) -> list[str]:
    out = list(paragraphs)
    for kind, at, text in edits:
        i = at % (len(out) + (kind == "insert")) if out or kind == "insert" else 0
        if kind == "insert":
            out.insert(i, text)
        elif out and kind == "delete" and len(out) > 1:
            del out[i]
        elif out:
            out[i] = text
    return out


def _texts(results: list[dict]) -> list[str]:
    return [r["text"] for r in sorted(results, key=lambda r: r["position"])]


_examples = iter(range(1_000_000))


def test_as_of_answers_match_a_replay_of_the_versions(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="hp")

    @settings(max_examples=6, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(start=st.lists(PARAGRAPH, min_size=1, max_size=6),
           edits=st.lists(st.lists(EDIT, min_size=1, max_size=3), min_size=1, max_size=3))
    def replay(start: list[str], edits: list[list[tuple[str, int, str]]]):
        n = next(_examples)
        doc = f"doc-{n}"
        texts = [start]
        for step in edits:
            texts.append(_apply(texts[-1], step))
        for text in texts:
            _put(tenant, doc, "\n\n".join(text))
        versions = _versions(tenant, doc)
        # each version ingested on its own, as a document of its own: what the live index makes of it
        for v, text in enumerate(texts, start=1):
            _put(tenant, f"replay-{n}-{v}", "\n\n".join(text))
        for v in range(1, len(texts) + 1):
            expected = _texts(_search(tenant, {"query": "ledger", "strategy": "text",
                                               "filters": {"document_ids": [f"replay-{n}-{v}"]}}))
            assert expected, "every chunk holds the word ledger"
            at = versions[v]["live_from"]
            then = _search(tenant, {"query": "ledger", "strategy": "text", "as_of": at,
                                    "filters": {"document_ids": [doc]}})
            assert _texts(then) == expected and {r["version"] for r in then} == {v}
            added = _get(tenant, f"/documents/{doc}/changes?since=0&until={v}")["added"]
            assert [c["text"] for c in added] == expected
            if v > 1:  # the changes from the version before, applied to it, give this one
                step = _get(tenant, f"/documents/{doc}/changes?since={v - 1}&until={v}")
                before = _get(tenant, f"/documents/{doc}/changes?since=0&until={v - 1}")["added"]
                kept = len(before) - len(step["removed"]) - len(step["changed"])
                assert step["unchanged"] == kept
                assert len(expected) == kept + len(step["added"]) + len(step["changed"])

    replay()
    assert next(_examples) > 1  # the property ran on several edit sequences (a failing one raises)
