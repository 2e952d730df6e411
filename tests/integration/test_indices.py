"""Index descriptors and POST /indices/select over HTTP against the shared real stack."""

from __future__ import annotations

import pytest

from ..helpers import new_tenant

INDICES = [
    {"name": "support_tickets", "description": "Customer support conversations and their resolution.",
     "fields": ["ticket_id", "customer_email", "subject", "priority", "resolved_at"]},
    {"name": "product_catalog", "description": "Products we sell with prices and stock levels.",
     "fields": ["sku", "product_name", "price", "stock_quantity", "category"]},
    {"name": "hr", "description": "",
     "fields": ["employee.name", "employee.salary", "employee.hire_date", "department.name", "department.budget"]},
    {"name": "web_logs", "description": "HTTP access logs of the public website.",
     "fields": ["timestamp", "status_code", "url_path", "user_agent", "latency_ms"]},
]


def register(tenant, indices, expect=200):
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/indices", {"indices": indices})
    assert status == expect, body
    return body


def select(tenant, query, **extra):
    status, body = tenant.search.post("/indices/select", {"query": query, "entity_ids": [tenant.entity_id], **extra})
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def company(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="idx")
    register(tenant, INDICES)
    return tenant


def test_select_ranks_with_evidence(company):
    body = select(company, "which tickets with high priority are not resolved yet?", k=3)
    first = body["indices"][0]
    assert first["name"] == "support_tickets"
    assert "priority" in first["evidence"]["fields"] and "ticket" in first["evidence"]["name"]
    assert body["count"] == 3 and body["confident"] is True

    prices = select(company, "what is the price of the blue kettle and is it in stock", k=2)
    assert prices["indices"][0]["name"] == "product_catalog"
    assert {"price", "stock_quantity"} <= set(prices["indices"][0]["evidence"]["fields"])


def test_qualified_fields_are_scored_by_their_best_part(company):
    body = select(company, "average salary of employees hired after 2020", k=2)
    assert body["indices"][0]["name"] == "hr"
    assert body["indices"][0]["evidence"]["part"] == "employee"


def test_vague_request_is_not_confident(company):
    body = select(company, "qwzx plorf vrumble", k=4)
    assert body["confident"] is False
    assert body["count"] == 4


def test_unchanged_descriptors_are_not_reembedded_and_delete(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="idx")
    assert register(tenant, INDICES)["embedded"] == 4
    again = register(tenant, INDICES)
    assert (again["embedded"], again["unchanged"]) == (0, 4)
    changed = [{**INDICES[0], "description": "Bug reports from customers."}, *INDICES[1:]]
    assert register(tenant, changed)["embedded"] == 1
    status, body = tenant.search.delete(f"/entities/{tenant.entity_id}/indices/web_logs")
    assert status == 200 and body["deleted"] == ["web_logs"]
    names = [i["name"] for i in select(tenant, "HTTP status codes and latency of the website", k=5)["indices"]]
    assert "web_logs" not in names and len(names) == 3
    status, listing = tenant.search.get(f"/entities/{tenant.entity_id}/indices")
    assert listing["count"] == 3
    assert {i["model_id"] for i in listing["indices"]} == {"sentence-transformers/all-MiniLM-L6-v2"}


def test_tenant_isolation(stack, upload_admin, company):
    other = new_tenant(stack, upload_admin, prefix="idx")
    register(other, [{"name": "recipes", "description": "Cooking recipes", "fields": ["title", "ingredients"]}])
    status, body = other.search.post("/indices/select", {"query": "support tickets", "entity_ids": [company.entity_id]})
    assert status == 403 and body["field"] == "entity_ids"
    assert other.search.get(f"/entities/{company.entity_id}/indices")[0] == 403
    assert other.search.delete(f"/entities/{company.entity_id}/indices/hr")[0] == 403
    status, body = other.search.post("/indices/select", {"query": "support tickets priority", "k": 5})
    assert status == 200 and [i["name"] for i in body["indices"]] == ["recipes"]


@pytest.mark.parametrize("indices, field", [
    ([{"name": "a b"}], "indices.0.name"),
    ([{"name": "x", "fields": "title"}], "indices.0.fields"),
    ([{"name": "x"}, {"name": "x"}], "indices.1.name"),
    ([], "indices"),
])
def test_bad_descriptors_are_400_naming_the_field(stack, upload_admin, indices, field):
    tenant = new_tenant(stack, upload_admin, prefix="idx")
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/indices", {"indices": indices})
    assert status == 400 and body["field"] == field, body


# Business indices whose names share single words with questions about other indices.
BUSINESS = [
    {"name": "reviews", "description": "Product reviews written by customers.",
     "fields": ["review_id", "product_sku", "stars", "review_text", "posted_at"]},
    {"name": "staff", "description": "Employees of the company.",
     "fields": ["employee_id", "full_name", "job_title", "department", "manager_id", "start_date", "email"]},
    {"name": "returns", "description": "Returned merchandise and refunds.",
     "fields": ["return_id", "order_id", "sku", "reason", "refund_amount", "received_at"]},
    {"name": "orders", "description": "Customer orders.",
     "fields": ["order_id", "customer_id", "order_date", "total", "status", "shipping_address"]},
    {"name": "ledger", "description": "General ledger of payments.",
     "fields": ["entry_id", "account", "debit", "credit", "posted_at", "payment_reference"]},
    {"name": "payroll", "description": "Salaries paid to employees.",
     "fields": ["employee_id", "pay_period", "gross_salary", "tax_withheld", "net_pay", "paid_at"]},
    {"name": "customers", "description": "Customer accounts.",
     "fields": ["customer_id", "name", "email", "city", "signup_date", "loyalty_tier"]},
    {"name": "inventory", "description": "Stock on hand per warehouse.",
     "fields": ["sku", "warehouse", "quantity_on_hand", "reorder_level"]},
    {"name": "support_tickets", "description": "Customer support conversations.",
     "fields": ["ticket_id", "customer_email", "subject", "priority", "resolved_at"]},
    {"name": "campaigns", "description": "Marketing campaigns and their budgets.",
     "fields": ["campaign_id", "channel", "budget", "start_date", "end_date", "clicks"]},
]
LURES = [
    # (question, the index whose fields answer it, the index one of its words lures to)
    ("Which employees in the quality department review supplier contracts, and who is their manager?",
     "staff", "reviews"),
    ("What net pay did each employee receive last pay period after payments went out?", "payroll", "ledger"),
    ("Which customers in Berlin signed up this year with the gold loyalty tier so we can return their calls?",
     "customers", "returns"),
]


@pytest.fixture(scope="module")
def business(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="idx")
    register(tenant, BUSINESS)
    return tenant


@pytest.mark.parametrize("question, expected, lure", LURES)
def test_a_lure_word_does_not_beat_the_index_whose_fields_answer(business, question, expected, lure):
    body = select(business, question, k=3)
    names = [i["name"] for i in body["indices"]]
    assert names[0] == expected, body["indices"]
    first = body["indices"][0]["evidence"]
    # the evidence is the answering fields, and the lure was in the running on its word
    assert first["fields"] or first["closest_fields"], first
    assert lure in names, names
