"""Collections over HTTP against the shared real stack: documents name their collection at upload,
the ingest worker keeps each collection's profile current, POST /search filters by collections or
lets index selection choose them ("auto"), and a key never sees another tenant's collections."""

from __future__ import annotations

import json

import pytest

from ..helpers import new_tenant, put_document, wait_document, wait_for

ORDERS = [
    {"order_id": "A-1001", "customer": {"email": "ana@example.com", "country": "PT"},
     "items": [{"sku": "KETTLE-BLUE", "quantity": 1}], "shipping_carrier": "parcelforce", "refund_status": "none"},
    {"order_id": "A-1002", "customer": {"email": "bo@example.com", "country": "SE"},
     "items": [{"sku": "TEAPOT-RED", "quantity": 2}], "shipping_carrier": "postnord", "refund_status": "requested"},
]
RECIPES = {
    "sourdough.md": "# Sourdough bread\n\nFeed the sourdough starter with rye flour the evening before. "
                    "Knead the dough, let it rise overnight, fold it twice and bake the loaf in a hot dutch oven "
                    "until the crust is dark. Sourdough needs a lively starter and patient proofing.",
    "risotto.md": "# Mushroom risotto\n\nToast the arborio rice in butter, add the porcini mushrooms and ladle "
                  "hot stock slowly while stirring. Finish the risotto with parmesan and butter. Risotto "
                  "rice releases starch when stirred, which makes the sauce creamy.",
}
LOOSE = "Quarterly meeting notes: the team discussed hiring plans and the office move to the new building."


def collections(tenant) -> dict:
    status, body = tenant.search.get(f"/entities/{tenant.entity_id}/collections")
    assert status == 200, body
    return {c["name"]: c for c in body["collections"]}


async def profile_where(tenant, name: str, predicate, timeout: float = 60.0) -> dict:
    """Poll the list route until the collection's profile satisfies ``predicate`` (the ingest
    worker recomputes it a moment after its documents change)."""
    def check():
        found = collections(tenant).get(name)
        return (found,) if predicate(found) else None
    return (await wait_for(check, timeout=timeout, interval=0.25))[0]


def search(tenant, query: str, **extra) -> dict:
    status, body = tenant.search.post("/search", {"query": query, "entity_ids": [tenant.entity_id], "k": 10,
                                                  "cache": False, **extra})
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
async def shop(stack, upload_admin):
    """A tenant with an `orders` collection (JSON), a `recipes` collection (markdown) and a document in none."""
    tenant = new_tenant(stack, upload_admin, prefix="col")
    for i, order in enumerate(ORDERS):
        put_document(tenant, f"order-{i}.json", json.dumps(order), content_type="application/json",
                     collection="orders", tags=["shop", "orders"], source="erp")
    for name, text in RECIPES.items():
        put_document(tenant, name, text, content_type="text/markdown", collection="recipes", tags=["kitchen"],
                     source="wiki")
    put_document(tenant, "notes.txt", LOOSE)
    for doc in [f"order-{i}.json" for i in range(len(ORDERS))] + [*RECIPES, "notes.txt"]:
        assert (await wait_document(tenant, doc))["status"] == "ready"
    await profile_where(tenant, "orders", lambda c: c and c["profile"] and c["profile"]["documents"] == 2)
    await profile_where(tenant, "recipes", lambda c: c and c["profile"] and c["profile"]["documents"] == 2)
    return tenant


def test_profile_describes_the_collection(shop):
    found = collections(shop)
    assert set(found) == {"orders", "recipes"}   # the document without a collection makes none
    orders = found["orders"]["profile"]
    assert {"customer.email", "items.sku", "shipping_carrier"} <= set(orders["fields"])   # JSON paths, no [i]
    assert orders["tags"][:2] == ["shop", "orders"] or set(orders["tags"]) == {"shop", "orders"}
    assert orders["sources"] == ["erp"]
    recipes = found["recipes"]["profile"]
    assert recipes["fields"] == []
    # distinctive terms come from the term statistics, as words of the text (not stems)
    assert {"sourdough", "risotto"} <= set(recipes["terms"]), recipes["terms"]
    assert "hiring" not in recipes["terms"]
    assert recipes["summary"] and ("sourdough" in recipes["summary"].lower() or "risotto" in recipes["summary"].lower())
    assert found["recipes"]["documents"] == found["recipes"]["ready_documents"] == 2


async def test_profile_follows_documents_as_they_are_uploaded_and_deleted(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="col")
    put_document(tenant, "a.md", RECIPES["sourdough.md"], content_type="text/markdown", collection="kitchen")
    await wait_document(tenant, "a.md")
    first = await profile_where(tenant, "kitchen", lambda c: c and c["profile"] and c["profile"]["documents"] == 1)
    assert "risotto" not in first["profile"]["terms"]

    put_document(tenant, "b.md", RECIPES["risotto.md"], content_type="text/markdown", collection="kitchen")
    await wait_document(tenant, "b.md")
    both = await profile_where(tenant, "kitchen", lambda c: c["profile"]["documents"] == 2)
    assert "risotto" in both["profile"]["terms"]

    # selection sees the profile: a risotto question finds the collection by its terms
    status, body = tenant.search.post("/indices/select", {"query": "how long to stir the arborio rice",
                                                          "entity_ids": [tenant.entity_id]})
    assert status == 200 and body["indices"][0]["name"] == "kitchen" and body["indices"][0]["kind"] == "collection"

    assert tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/b.md")[0] == 200
    one = await profile_where(tenant, "kitchen", lambda c: c["profile"]["documents"] == 1)
    assert "risotto" not in one["profile"]["terms"] and one["documents"] == 1

    assert tenant.upload.delete(f"/entities/{tenant.entity_id}/documents/a.md")[0] == 200
    await profile_where(tenant, "kitchen", lambda c: c is None)   # no document, no description: gone
    status, body = tenant.search.post("/indices/select", {"query": "arborio rice", "entity_ids": [tenant.entity_id]})
    assert status == 200 and body["indices"] == []


def test_search_filters_by_collections(shop):
    body = search(shop, "what was ordered and shipped", collections=["orders"])
    assert body["results"] and {r["document_id"] for r in body["results"]} <= {"order-0.json", "order-1.json"}
    assert body["collections"] == {"mode": "list", "searched": ["orders"], "confident": None, "shortlist": None}

    both = search(shop, "meeting notes about hiring", collections=["recipes", "orders"])
    assert "notes.txt" not in {r["document_id"] for r in both["results"]}
    # without the filter the loose document is found: the filter is what excluded it
    assert search(shop, "meeting notes about hiring")["results"][0]["document_id"] == "notes.txt"
    assert "collections" not in search(shop, "meeting notes about hiring")


def test_auto_searches_the_collection_the_query_belongs_to(shop):
    body = search(shop, "how do I feed the sourdough starter before baking bread", collections="auto")
    assert body["collections"]["mode"] == "auto" and body["collections"]["confident"] is True, body["collections"]
    assert body["collections"]["searched"] == ["recipes"]
    assert body["results"] and {r["document_id"] for r in body["results"]} <= set(RECIPES)

    vague = search(shop, "hiring plans for the office move", collections="auto")
    assert vague["collections"]["confident"] is False and vague["collections"]["searched"] is None
    assert vague["results"][0]["document_id"] == "notes.txt"   # not confident: nothing was hidden


def test_auto_is_part_of_the_cache_key(shop):
    query = "refund status of the blue kettle order"
    plain = shop.search.post("/search", {"query": query, "entity_ids": [shop.entity_id]})[1]
    auto = shop.search.post("/search", {"query": query, "entity_ids": [shop.entity_id], "collections": "auto"})[1]
    assert auto["cache"] == "none" and "collections" in auto and "collections" not in plain
    again = shop.search.post("/search", {"query": query, "entity_ids": [shop.entity_id], "collections": "auto"})[1]
    assert again["cache"] == "exact" and again["collections"] == auto["collections"]


def test_description_is_set_and_used_by_selection(shop):
    status, body = shop.search.put(f"/entities/{shop.entity_id}/collections/orders",
                                   {"description": "Customer purchases, invoices and parcel deliveries."})
    assert status == 200 and body["description"].startswith("Customer purchases"), body
    status, body = shop.search.post("/indices/select", {"query": "invoices of customer purchases",
                                                        "entity_ids": [shop.entity_id], "k": 2})
    assert status == 200 and body["indices"][0]["name"] == "orders"
    assert {"invoic", "purchas"} & set(body["indices"][0]["evidence"]["description"]), body["indices"][0]
    assert collections(shop)["orders"]["description"].startswith("Customer purchases")


def test_an_external_index_cannot_take_a_collections_name(shop):
    status, body = shop.search.post(f"/entities/{shop.entity_id}/indices",
                                    {"indices": [{"name": "recipes", "description": "a SQL table"}]})
    assert status == 409 and body["field"] == "indices.0.name", body
    assert shop.search.delete(f"/entities/{shop.entity_id}/indices/recipes")[0] == 404
    assert "recipes" in collections(shop)


def test_tenant_isolation(stack, upload_admin, shop):
    other = new_tenant(stack, upload_admin, prefix="col")
    assert other.search.get(f"/entities/{shop.entity_id}/collections")[0] == 403
    assert other.search.get(f"/entities/{shop.entity_id}/collections/orders")[0] == 403
    assert other.search.put(f"/entities/{shop.entity_id}/collections/orders", {"description": "x"})[0] == 403
    status, body = other.search.post("/indices/select", {"query": "sourdough starter recipes"})
    assert status == 200 and body["indices"] == []
    status, body = other.search.post("/search", {"query": "sourdough starter", "collections": "auto"})
    assert status == 200 and body["results"] == [] and body["collections"]["shortlist"] == []
    status, body = other.search.post("/search", {"query": "sourdough", "entity_ids": [shop.entity_id],
                                                 "collections": ["recipes"]})
    assert status == 403 and body["field"] == "entity_ids"
    assert collections(other) == {}


@pytest.mark.parametrize("path_suffix, body, field", [
    ("?collection=has%20space", "x", "collection"),
    ("?collection=" + "c" * 129, "x", "collection"),
])
def test_bad_collection_at_upload(shop, path_suffix, body, field):
    status, answer = shop.upload.put(f"/entities/{shop.entity_id}/documents/bad.txt{path_suffix}", raw=body.encode(),
                                     headers={"Content-Type": "text/plain"})
    assert status == 400 and answer["field"] == field, answer
