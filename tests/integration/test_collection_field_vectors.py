"""Field vectors of collections over HTTP against the shared real stack: the JSON field paths a
collection's documents bring are embedded one by one (as an external descriptor's fields are), kept
while the fields stay the same and made only for new ones, and index selection scores through them."""

from __future__ import annotations

import json

import numpy as np
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices as ix
from edgeindex.selection.catalog_cache import as_vector

from ..helpers import new_tenant, put_document, wait_document
from .test_collections import profile_where

TICKET = {"ticket_id": "T-1", "customer_email": "ana@example.com", "subject": "Kettle arrived broken"}


async def _row(db, tenant, name: str) -> dict:
    rows = await db.fetch("SELECT fields, field_vectors, field_hash, fields_embedded_at, embedding, updated_at "
                          "FROM index_descriptors WHERE entity_id = %(e)s AND name = %(n)s",
                          {"e": tenant.entity_id, "n": name})
    assert len(rows) == 1
    return rows[0]


def _matrix(row, name: str) -> np.ndarray:
    plan = ix.field_plan(ix.IndexDef(name, "", tuple(row["fields"]), "collection"))
    matrix = fv.unpack(row["field_vectors"], len(plan), len(as_vector(row["embedding"])))
    assert matrix is not None and matrix.shape[0] == len(plan) == len(row["fields"])
    return matrix


async def _upload(tenant, document_id: str, body: dict, collection: str) -> None:
    put_document(tenant, document_id, json.dumps(body), content_type="application/json", collection=collection)
    assert (await wait_document(tenant, document_id))["status"] == "ready"


async def test_new_json_fields_get_their_own_vectors(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="cfv")
    await _upload(tenant, "t1.json", TICKET, "support")
    await profile_where(tenant, "support", lambda c: c and c["profile"] and c["profile"]["documents"] == 1)
    first = await _row(db, tenant, "support")
    assert set(first["fields"]) == set(TICKET)
    before = _matrix(first, "support")
    assert np.allclose(np.linalg.norm(before, axis=1), 1.0, atol=1e-3)
    assert len({r.tobytes() for r in before}) == len(TICKET)
    assert first["fields_embedded_at"] is not None

    await _upload(tenant, "t2.json", {**TICKET, "ticket_id": "T-2", "refund_amount": 25, "courier": "dhl"}, "support")
    await profile_where(tenant, "support", lambda c: c["profile"]["documents"] == 2)
    grown = await _row(db, tenant, "support")
    assert set(grown["fields"]) == {*TICKET, "refund_amount", "courier"}
    after = _matrix(grown, "support")
    assert len({r.tobytes() for r in after}) == len(TICKET) + 2
    kept = {f: after[i].tobytes() for i, f in enumerate(grown["fields"])}
    assert all(kept[f] == before[i].tobytes() for i, f in enumerate(first["fields"]))
    assert grown["fields_embedded_at"] > first["fields_embedded_at"] and grown["field_hash"] != first["field_hash"]


async def test_an_unchanged_field_set_is_not_embedded_again(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="cfv")
    await _upload(tenant, "t1.json", TICKET, "support")
    await profile_where(tenant, "support", lambda c: c and c["profile"] and c["profile"]["documents"] == 1)
    first = await _row(db, tenant, "support")

    # another ticket with the same fields: the profile changes (its count, its terms), its fields do not
    await _upload(tenant, "t2.json", {"ticket_id": "T-2", "customer_email": "bo@example.com",
                                      "subject": "Teapot lid missing, refund please"}, "support")
    await profile_where(tenant, "support", lambda c: c["profile"]["documents"] == 2)
    second = await _row(db, tenant, "support")
    assert second["updated_at"] > first["updated_at"]          # the profile was written again ...
    assert second["fields_embedded_at"] == first["fields_embedded_at"]   # ... its fields not embedded
    assert second["field_hash"] == first["field_hash"]
    assert bytes(second["field_vectors"]) == bytes(first["field_vectors"])

    # a document that leaves takes no field with it: nothing embedded either
    assert tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/t1.json")[0] == 200
    await profile_where(tenant, "support", lambda c: c["profile"]["documents"] == 1)
    third = await _row(db, tenant, "support")
    assert third["fields_embedded_at"] == first["fields_embedded_at"]


async def test_select_ranks_a_collection_by_a_field_only_its_documents_have(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="cfv")
    shared = {"id": 1, "name": "Northwind", "city": "Lisbon", "notes": "Met at the spring fair."}
    await _upload(tenant, "a.json", {**shared, "annual_revenue": 1200000}, "records_a")
    await _upload(tenant, "b.json", {**shared, "hire_date": "2021-03-01"}, "records_b")
    for name in ("records_a", "records_b"):
        await profile_where(tenant, name, lambda c: c and c["profile"] and c["profile"]["documents"] == 1)

    for query, expected, field in (("how much money did they earn last year", "records_a", "annual_revenue"),
                                   ("when did the staff member join the company", "records_b", "hire_date")):
        status, body = tenant.search.post("/indices/select", {"query": query, "entity_ids": [tenant.entity_id]})
        assert status == 200, body
        first = body["indices"][0]
        assert first["name"] == expected and first["kind"] == "collection", body
        assert first["evidence"]["closest_fields"][0] == field, first["evidence"]
