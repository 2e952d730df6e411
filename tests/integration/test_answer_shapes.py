"""What every JSON answer has in common, whichever worker or route writes it: timestamps in one
ISO 8601 form (``2026-12-01T22:40:52.19+00:00``), so a client parses entities, collections and
documents with the same code."""

from __future__ import annotations

import re
from datetime import datetime

from ..helpers import Client, put_document, wait_document

ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(\+00:00|Z)$")


def timestamps(answer: dict) -> dict[str, str]:
    return {key: value for key, value in answer.items() if key.endswith("_at") and value is not None}


def assert_iso(answer: dict, expected: set[str]) -> None:
    found = timestamps(answer)
    assert set(found) >= expected, answer
    for key, value in found.items():
        assert ISO_8601.match(value), f"{key}={value!r}"
        datetime.fromisoformat(value)


async def test_entities_collections_and_documents_share_one_timestamp_form(stack, upload_admin, tenant):
    status, entities = upload_admin.get("/admin/entities")
    assert status == 200, entities
    mine = next(e for e in entities["entities"] if e["id"] == tenant.entity_id)
    assert_iso(mine, {"created_at"})

    put_document(tenant, "stamped.md", "# Stamped\n\nA note about kettles and tea.", content_type="text/markdown",
                 collection="stamps")
    await wait_document(tenant, "stamped.md")
    status, doc = tenant.upload.get(f"/entities/{tenant.entity_id}/documents/stamped.md")
    assert status == 200, doc
    assert_iso(doc, {"created_at", "updated_at"})

    status, described = tenant.search.put(f"/entities/{tenant.entity_id}/collections/stamps",
                                          {"description": "notes with timestamps"})
    assert status == 200, described
    assert_iso(described, {"created_at", "updated_at"})
    status, listed = tenant.search.get(f"/entities/{tenant.entity_id}/collections")
    assert status == 200, listed
    stamps = next(c for c in listed["collections"] if c["name"] == "stamps")
    assert_iso(stamps, {"created_at", "updated_at"})


def test_an_admin_search_over_an_entity_that_does_not_exist_is_a_404_naming_it(stack, upload_admin, tenant):
    admin = Client(stack.url("search"), upload_admin.key)
    missing = f"{tenant.entity_id}-nowhere"
    for path, body in (("/search", {"query": "kettles", "entity_ids": [tenant.entity_id, missing]}),
                       ("/tools/select", {"query": "kettles", "entity_ids": [missing]}),
                       ("/indices/select", {"query": "kettles", "entity_ids": [missing]})):
        status, answer = admin.post(path, body)
        assert status == 404, (path, answer)
        assert answer["field"] == "entity_ids", (path, answer)
        assert missing in answer["message"], (path, answer)
        assert tenant.entity_id not in answer["message"].replace(missing, ""), (path, answer)
    status, answer = admin.post("/search", {"query": "kettles", "entity_ids": [tenant.entity_id], "cache": False})
    assert status == 200, answer
