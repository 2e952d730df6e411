"""Field vectors of index descriptors over HTTP against the shared real stack (real model, Postgres)."""

from __future__ import annotations

import numpy as np
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices as ix
from edgeindex.selection.catalog_cache import as_vector

from ..helpers import new_tenant

HR = {"name": "hr", "tables": ["employee", "department"],
      "fields": ["employee.name", "employee.salary", "employee.hire_date", "department.name", "department.budget"]}
WEB = {"name": "web_logs", "description": "HTTP access logs of the public website.",
       "fields": ["timestamp", "status_code", "url_path", "user_agent"]}


def register(tenant, indices):
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/indices", {"indices": indices})
    assert status == 200, body
    return body


def select(tenant, query, **extra):
    status, body = tenant.search.post("/indices/select", {"query": query, "entity_ids": [tenant.entity_id], **extra})
    assert status == 200, body
    return body


async def _stored(db, tenant) -> dict[str, dict]:
    rows = await db.fetch("SELECT name, field_vectors, embedding FROM index_descriptors WHERE entity_id = %(e)s",
                          {"e": tenant.entity_id})
    return {r["name"]: r for r in rows}


def _matrix(row, descriptor):
    plan = ix.field_plan(ix.parse_index(descriptor, "i"))
    return fv.unpack(row["field_vectors"], len(plan), len(as_vector(row["embedding"])))


async def test_each_field_is_stored_as_its_own_vector_and_the_closest_are_evidence(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="fv")
    assert register(tenant, [HR, WEB])["embedded"] == 2
    stored = await _stored(db, tenant)
    for descriptor, fields in ((HR, 5), (WEB, 4)):   # hr's table names are parts, not fields
        matrix = _matrix(stored[descriptor["name"]], descriptor)
        assert matrix is not None and matrix.shape[0] == fields
        assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
        assert len({row.tobytes() for row in matrix}) == fields

    answer = select(tenant, "how much are the employees paid?", k=2)
    assert answer["indices"][0]["name"] == "hr"
    assert answer["indices"][0]["evidence"]["closest_fields"][0] == "employee.salary"


async def test_field_vectors_are_kept_while_unchanged_and_made_again_for_new_fields(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="fv")
    register(tenant, [HR, WEB])
    before = await _stored(db, tenant)
    assert register(tenant, [HR, WEB])["embedded"] == 0
    assert bytes((await _stored(db, tenant))["hr"]["field_vectors"]) == bytes(before["hr"]["field_vectors"])

    grown = {**HR, "fields": [*HR["fields"], "employee.bonus"]}
    assert register(tenant, [grown])["embedded"] == 1
    after = await _stored(db, tenant)
    assert _matrix(after["hr"], grown).shape[0] == 6
    assert bytes(after["web_logs"]["field_vectors"]) == bytes(before["web_logs"]["field_vectors"])
