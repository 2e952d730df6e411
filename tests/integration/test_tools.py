"""Tool registry and POST /tools/select over HTTP against the shared real stack (real model, Postgres)."""

from __future__ import annotations

import json

import pytest

from ..helpers import new_tenant

# A small shop-support catalogue: every tool is about something different, so each test's
# expected pick is unambiguous, and two tools form a requirement chain.
CATALOGUE = [
    {"name": "get_weather", "description": "Current weather and temperature forecast for a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "send_email", "description": "Send an email message to a recipient address.",
     "parameters": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}}},
    {"name": "get_order_details", "description": "Look up an order by its id: items, amounts, shipping status.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}, "category": "orders"},
    {"name": "process_refund", "description": "Refund a customer's payment, fully or partly.",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
     "requires": ["get_order_details"], "category": "payments"},
    {"name": "translate_text", "description": "Translate text between languages.",
     "parameters": [{"name": "text", "type": "string", "required": True},
                    {"name": "target_language", "type": "string", "required": True}]},
    {"name": "calendar.create_event", "description": "Create a meeting in the user's calendar.",
     "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "start": {"type": "string"}}}},
    {"name": "stock_price", "description": "Latest trading price of a stock ticker symbol.",
     "parameters": {"type": "object", "properties": {"ticker": {"type": "string"}}}},
    {"name": "compute_bmi", "description": "Body mass index from height and weight.",
     "parameters": {"type": "object", "properties": {"height_cm": {"type": "number"}, "weight_kg": {"type": "number"}}}},
    {"name": "search_flights", "description": "Find airline flights between two airports on a date.",
     "parameters": {"type": "object", "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}}}},
    {"name": "resize_image", "description": "Resize a picture to a given width and height in pixels.",
     "parameters": {"type": "object", "properties": {"width": {"type": "integer"}, "height": {"type": "integer"}}}},
    {"name": "zodiac_sign", "description": "Astrological sign for a birth date.",
     "parameters": {"type": "object", "properties": {"birth_date": {"type": "string"}}}},
    {"name": "convert_currency", "description": "Convert an amount of money from one currency to another.",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "from": {"type": "string"},
                                                     "to": {"type": "string"}}}, "category": "payments"},
]


def register(tenant, tools, expect=200):
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", {"tools": tools})
    assert status == expect, body
    return body


def select(tenant, query, **extra):
    status, body = tenant.search.post("/tools/select", {"query": query, "entity_ids": [tenant.entity_id], **extra})
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def shop(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    register(tenant, CATALOGUE)
    return tenant


def test_select_returns_full_definitions_scores_reasons_and_token_account(shop):
    body = select(shop, "what will the weather be like in Paris tomorrow?", k=3)
    first = body["tools"][0]
    assert first["name"] == "get_weather"
    assert first["reason"] == "matched" and first["score"] > 0
    assert first["definition"]["parameters"]["required"] == ["city"]
    assert body["count"] <= 3 and body["fallback"] is None and body["confident"] is True
    status, listing = shop.search.get(f"/entities/{shop.entity_id}/tools")
    assert status == 200 and listing["count"] == len(CATALOGUE)
    # the account is the tokenizer's count of what was sent against the whole registry
    assert body["tokens"]["registry"] == listing["tokens"] > 0
    sent = sum(t["tokens"] for t in body["tools"])
    assert body["tokens"]["selected"] == sent > 0
    assert body["tokens"]["reduction"] == round(1 - sent / listing["tokens"], 4)


def test_plain_parameter_list_becomes_json_schema(shop):
    status, listing = shop.search.get(f"/entities/{shop.entity_id}/tools")
    translate = next(t for t in listing["tools"] if t["name"] == "translate_text")
    assert translate["parameters"] == {"type": "object", "required": ["text", "target_language"],
                                       "properties": {"text": {"type": "string"},
                                                      "target_language": {"type": "string"}}}
    assert translate["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_exact_name_fast_path(shop):
    # nothing in the wording points at zodiac_sign; naming it must still bring it, first
    body = select(shop, "use zodiac_sign on the quarterly revenue spreadsheet", k=2)
    assert body["tools"][0]["name"] == "zodiac_sign"
    assert body["tools"][0]["reason"] == "named"
    dotted = select(shop, "call calendar.create_event please", k=1)
    assert [t["name"] for t in dotted["tools"]] == ["calendar.create_event"]


def test_requirement_closure(shop):
    body = select(shop, "refund the customer, the parcel arrived broken", k=1)
    names = [t["name"] for t in body["tools"]]
    assert names[0] == "process_refund"
    required = next(t for t in body["tools"] if t["name"] == "get_order_details")
    assert required["reason"] == "required" and required["required_by"] == "process_refund"
    without = select(shop, "refund the customer, the parcel arrived broken", k=1, include_requirements=False)
    assert [t["name"] for t in without["tools"]] == ["process_refund"]


def test_category_expansion(shop):
    # the request names the category "payments": its other tool comes along, saying why
    body = select(shop, "payments: refund the customer", k=1, include_requirements=False)
    reasons = {t["name"]: t for t in body["tools"]}
    assert reasons["process_refund"]["reason"] == "matched"
    assert reasons["convert_currency"]["reason"] == "category"
    assert reasons["convert_currency"]["category"] == "payments"
    plain = select(shop, "refund the customer", k=1, include_requirements=False, expand_categories=False)
    assert [t["name"] for t in plain["tools"]] == ["process_refund"]


def test_cold_start_small_registry_sends_everything(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    register(tenant, CATALOGUE[:3])
    body = select(tenant, "send a message to bob", k=5)
    assert body["fallback"] == "small_registry"
    assert sorted(t["name"] for t in body["tools"]) == sorted(t["name"] for t in CATALOGUE[:3])
    assert {t["reason"] for t in body["tools"]} == {"fallback"}


def test_nothing_confident_gets_a_bounded_shortlist_and_a_search_tool_that_works(shop):
    # unsure: the k best, flagged, and find_tools, not the whole registry (the caller may still ask for it)
    body = select(shop, "qwzx plorf vrumble", k=2, include_requirements=False)
    assert body["confident"] is False
    assert body["fallback"] == "not_confident_shortlist"
    assert body["count"] == 2 and {t["reason"] for t in body["tools"]} == {"fallback"}
    search = body["search_tool"]
    definition = search["definition"]
    assert definition["name"] == "find_tools" and definition["parameters"]["required"] == ["query"]
    assert body["tokens"]["selected"] == sum(t["tokens"] for t in body["tools"]) + search["tokens"]
    assert body["tokens"]["selected"] < body["tokens"]["registry"]
    # the agent calls it with its own arguments: the call it stands for finds the tool, never one it holds
    shortlist = {t["name"] for t in body["tools"]}
    assert set(search["call"]["body"]["exclude"]) == shortlist
    arguments = {"query": "what will the weather be like in Paris tomorrow?", "k": 2}
    assert search["call"]["method"] == "POST" and search["call"]["path"] == "/tools/select"
    status, found = shop.search.post(search["call"]["path"], {**search["call"]["body"], **arguments})
    assert status == 200, found
    names = [t["name"] for t in found["tools"]]
    assert names[0] == "get_weather" and not shortlist & set(names)
    whole = select(shop, "qwzx plorf vrumble", k=2, include_requirements=False, whole_registry_when_unsure=True)
    assert whole["fallback"] == "not_confident" and whole["count"] == len(CATALOGUE)
    assert "search_tool" not in whole


def test_a_token_budget_and_held_tools_bound_what_is_sent(shop):
    body = select(shop, "refund the customer, the parcel arrived broken", k=3)
    first, *rest = body["tools"]
    assert rest, body["tools"]
    budget = select(shop, "refund the customer, the parcel arrived broken", k=3, max_tokens=first["tokens"])
    assert [t["name"] for t in budget["tools"]] == [first["name"]]
    held = select(shop, "refund the customer, the parcel arrived broken", k=3, exclude=[first["alias"]])
    assert first["name"] not in {t["name"] for t in held["tools"]} and held["count"] >= 1


def test_nothing_confident_in_a_large_registry_sends_the_k_best_flagged(stack, upload_admin):
    # more tools than a prompt should hold: a request matching none of them gets its k best, flagged,
    # not a slice of the registry (the small registry above still gets every tool)
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    subjects = ["invoice", "weather", "flight", "hotel", "recipe", "playlist", "vehicle", "certificate",
                "warehouse", "podcast", "timesheet", "campaign", "parking spot", "tax return", "backup"]
    verbs = ["get", "create", "delete", "update", "export"]
    tools = [{"name": f"{v}_{s.replace(' ', '_')}", "description": f"{v.capitalize()} a {s} of the user."}
             for v in verbs for s in subjects]
    register(tenant, tools)
    body = select(tenant, "qwzx plorf vrumble", k=4)
    assert body["registry_size"] == len(tools) > 64
    assert body["confident"] is False
    assert body["fallback"] == "not_confident_shortlist"
    assert body["count"] == 4 and {t["reason"] for t in body["tools"]} == {"fallback"}
    scores = [t["score"] for t in body["tools"]]
    assert scores == sorted(scores, reverse=True)
    assert body["tokens"]["reduction"] > 0.9
    confident = select(tenant, "export the podcast", k=4)
    assert confident["fallback"] is None and confident["tools"][0]["name"] == "export_podcast"


async def test_register_unchanged_is_not_reembedded_changed_is(stack, upload_admin, db):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    tools = [dict(t) for t in CATALOGUE[:6]]
    first = register(tenant, tools)
    assert first["embedded"] == 6

    async def rows():
        found = await db.fetch("SELECT name, embedding::text AS v, model_id, updated_at FROM tools "
                               "WHERE entity_id = %(e)s", {"e": tenant.entity_id})
        return {r["name"]: r for r in found}

    before = await rows()
    again = register(tenant, tools)
    assert (again["embedded"], again["unchanged"]) == (0, 6)
    assert await rows() == before     # nothing rewritten, not even updated_at

    tools[0] = {**tools[0], "description": "Weather forecast: rain, wind and temperature for any town."}
    tools[1] = {**tools[1], "requires": ["get_weather"]}       # not part of the embedded text
    changed = register(tenant, tools)
    status = {t["name"]: t["status"] for t in changed["tools"]}
    assert status["get_weather"] == "embedded" and status["send_email"] == "updated"
    assert (changed["embedded"], changed["updated_without_embedding"], changed["unchanged"]) == (1, 1, 4)
    after = await rows()
    assert after["get_weather"]["v"] != before["get_weather"]["v"]
    assert after["send_email"]["v"] == before["send_email"]["v"]
    assert after["get_order_details"] == before["get_order_details"]
    assert {r["model_id"] for r in after.values()} == {"sentence-transformers/all-MiniLM-L6-v2"}


def test_delete_tool(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    register(tenant, CATALOGUE)
    assert select(tenant, "convert 100 euros to dollars", k=1)["tools"][0]["name"] == "convert_currency"
    status, body = tenant.search.delete(f"/entities/{tenant.entity_id}/tools/convert_currency")
    assert status == 200 and body["deleted"] == ["convert_currency"]
    names = [t["name"] for t in select(tenant, "convert 100 euros to dollars", k=5)["tools"]]
    assert "convert_currency" not in names
    status, listing = tenant.search.get(f"/entities/{tenant.entity_id}/tools")
    assert listing["count"] == len(CATALOGUE) - 1
    status, body = tenant.search.delete(f"/entities/{tenant.entity_id}/tools/convert_currency")
    assert status == 404 and body["field"] == "name"


def test_tenant_isolation(stack, upload_admin, shop):
    other = new_tenant(stack, upload_admin, prefix="tools")
    register(other, [{"name": "bake_bread", "description": "Bake a loaf of sourdough bread."},
                     *CATALOGUE[6:]])
    # the other key names shop's entity: 403, never shop's tools
    status, body = other.search.post("/tools/select", {"query": "weather in Paris", "entity_ids": [shop.entity_id]})
    assert status == 403 and body["field"] == "entity_ids"
    assert other.search.get(f"/entities/{shop.entity_id}/tools")[0] == 403
    assert other.search.post(f"/entities/{shop.entity_id}/tools", {"tools": CATALOGUE[:1]})[0] == 403
    assert other.search.delete(f"/entities/{shop.entity_id}/tools/get_weather")[0] == 403
    status, body = other.search.post("/tools/feedback", {"query": "x", "entity_ids": [shop.entity_id],
                                                         "used": ["get_weather"]})
    assert status == 403
    # without entity_ids a key selects over its own grant only: shop's names never appear
    status, body = other.search.post("/tools/select", {"query": "weather forecast for Paris", "k": 5})
    assert status == 200
    assert {t["entity_id"] for t in body["tools"]} == {other.entity_id}
    assert "get_weather" not in {t["name"] for t in body["tools"]}
    assert shop.search.get(f"/entities/{shop.entity_id}/tools")[1]["count"] == len(CATALOGUE)


def test_bulk_import_from_mcp_and_openai(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    mcp = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "read_file", "description": "Read a file from disk.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "list_directory", "description": "List the entries of a directory.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]}}
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", mcp)
    assert status == 200 and body["embedded"] == 2, body
    openai = {"tools": [{"type": "function", "function": {
        "name": "get_stock_quote", "description": "Quote for a ticker.",
        "parameters": {"type": "object", "properties": {"ticker": {"type": "string"}}}}}]}
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", openai)
    assert status == 200 and body["embedded"] == 1
    status, listing = tenant.search.get(f"/entities/{tenant.entity_id}/tools")
    by_name = {t["name"]: t for t in listing["tools"]}
    assert by_name["read_file"]["parameters"]["required"] == ["path"]
    assert by_name["get_stock_quote"]["parameters"]["properties"] == {"ticker": {"type": "string"}}


@pytest.mark.parametrize("tools, field", [
    ([CATALOGUE[0], {"name": "bad", "parameters": {"type": "object", "properties": {"x": {"type": "strnig"}}}}],
     "tools.1.parameters"),
    ([CATALOGUE[0], {"name": "bad", "parameters": {"type": "object", "required": "x"}}], "tools.1.parameters"),
    ([CATALOGUE[0], {"name": "bad", "parameters": {"type": "array"}}], "tools.1.parameters"),
    ([CATALOGUE[0], {"type": "function", "function": {"name": "bad", "parameters": {"type": 5}}}],
     "tools.1.function.parameters"),
    ([CATALOGUE[0], {**CATALOGUE[1], "name": "get_weather"}], "tools.1.name"),
    ([{"name": "   "}], "tools.0.name"),
    ([{"name": "tab\there"}], "tools.0.name"),
    ([{"name": "x" * 257}], "tools.0.name"),
    ([{"description": "no name"}], "tools.0.name"),
    ([{"name": "x", "parameters": [{"name": "a", "type": "quaternion"}]}], "tools.0.parameters.0.type"),
    ([{"name": "x", "requires": ["x"]}], "tools.0.requires"),
    ([{"name": "x", "parameters": {"type": "object", "$schema": ["x"]}}], "tools.0.parameters.$schema"),
    ([{"name": "x", "parameters": {"type": "object", "$schema": 5}}], "tools.0.parameters.$schema"),
    ([{"name": "x", "parameters": {"type": "object", "$schema": {}}}], "tools.0.parameters.$schema"),
    ([{"name": f"tool_{i}"} for i in range(1001)], "tools"),
    ([], "tools"),
])
def test_bad_definitions_are_400_naming_the_field(stack, upload_admin, tools, field):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    status, body = tenant.search.post(f"/entities/{tenant.entity_id}/tools", {"tools": tools})
    assert status == 400, body
    assert body["field"] == field, body
    # nothing of a rejected request was registered
    assert tenant.search.get(f"/entities/{tenant.entity_id}/tools")[1]["count"] == 0


@pytest.mark.parametrize("request_body, field", [
    ({"query": ""}, "query"),
    ({"query": "x", "k": 0}, "k"),
    ({"query": "x", "threshold": "high"}, "threshold"),
    ({"query": "x", "colour": "red"}, "colour"),
])
def test_bad_select_requests(shop, request_body, field):
    status, body = shop.search.post("/tools/select", {"entity_ids": [shop.entity_id], **request_body})
    assert status == 400 and body["field"] == field, body


def test_feedback_improves_later_selection_and_stays_bounded(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    register(tenant, CATALOGUE)
    # team jargon no definition explains: for this agent it means checking a ticker price
    query = "do the usual friday morning check for the finance team"
    before = [t["name"] for t in select(tenant, query, k=5)["tools"]]
    assert before[0] != "stock_price"
    status, body = tenant.search.post("/tools/feedback", {"query": query, "entity_ids": [tenant.entity_id],
                                                          "used": ["stock_price"], "selected": before[:5]})
    assert status == 200 and body["embedded"] == 1, body   # the request's text alone
    after = select(tenant, query, k=5)
    assert after["tools"][0]["name"] == "stock_price" and after["fallback"] is None
    # the feedback refreshed the learned layer of one tool; the catalogue was not rebuilt
    assert after["catalogue"] == {"state": "refreshed", "refreshed_tools": 1}, after["catalogue"]
    assert select(tenant, query, k=5)["catalogue"] == {"state": "cached"}
    # it generalises to a paraphrase, not only the same string
    assert select(tenant, "the usual friday check for finance, please", k=3)["tools"][0]["name"] == "stock_price"
    # many more confirmations: the prior grows but stays under its bound, and other requests are unaffected
    for _ in range(30):
        tenant.search.post("/tools/feedback", {"query": query, "entity_ids": [tenant.entity_id],
                                               "used": ["stock_price"]})
    weather = select(tenant, "what will the weather be like in Paris tomorrow?", k=1)
    assert weather["tools"][0]["name"] == "get_weather"
    prior = next(t for t in select(tenant, query, k=5)["tools"] if t["name"] == "stock_price")["scores"]["prior"]
    assert 0.5 < prior < 0.75
    status, body = tenant.search.post("/tools/feedback", {"query": query, "entity_ids": [tenant.entity_id],
                                                          "used": ["no_such_tool"]})
    assert status == 400 and body["field"] == "used.0"


def test_a_two_task_request_gets_both_tasks_tools_over_a_near_duplicate(stack, upload_admin):
    # One sentence, two tasks: the weather words fill the whole request's first places with near-duplicate
    # weather tools; the clause "convert 300 US dollars to euros" (its vector pooled from the request's own
    # token vectors, clauses.py) picks the currency tool after them. Without clause picks it is not sent.
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    weather = [("get_weather", "Current weather conditions for a city."),
               ("weather_forecast", "Weather forecast for the next days in a city."),
               ("hourly_temperature", "Hourly temperature forecast for a location."),
               ("weather.rain_chance", "Chance of rain in a city over the coming days."),
               ("weather.wind_speed", "Wind speed forecast for a city."),
               ("uv_index", "Ultraviolet index forecast for a city.")]
    subjects = ["invoice", "flight", "recipe", "playlist", "vehicle", "certificate", "warehouse", "podcast",
                "timesheet", "campaign", "parking spot", "tax return", "backup"]
    others = [(f"{v}_{s.replace(' ', '_')}", f"{v.capitalize()} a {s} of the user.")
              for v in ["get", "create", "delete", "update", "export"] for s in subjects]
    register(tenant, [{"name": name, "description": text} for name, text in weather + others]
             + [t for t in CATALOGUE if t["name"] != "get_weather"])
    body = select(tenant, "What is the weather forecast for Paris this week with hourly temperatures and rain, "
                          "and then convert 300 US dollars to euros", k=3)
    names = [t["name"] for t in body["tools"]]
    assert body["fallback"] is None and len(names) == 3
    # both tasks' tools: the currency tool takes the place of a third near-duplicate weather tool
    assert set(names[:2]) <= {name for name, _ in weather}
    assert names[2] == "convert_currency", names
    currency = next(t for t in body["tools"] if t["name"] == "convert_currency")
    assert currency["reason"] == "matched" and currency["clause"] == "convert 300 US dollars to euros"


# A catalogue with a related neighbourhood: fitness tools around compute_bmi (the shop's), six weather tools,
# and 65 generic ones; larger than FALLBACK_MAX, so the confident path ranks it.
FITNESS = [("body_fat_percentage", "Estimate body fat percentage from waist and neck measurements."),
           ("daily_calorie_needs", "Calories a person needs a day from age, height and activity."),
           ("ideal_weight", "Ideal body weight for a height."),
           ("calorie_counter", "Count the calories of a meal."),
           ("heart_rate_zones", "Heart rate training zones for an age."),
           ("daily_water_intake", "How much water a person should drink a day."),
           ("running_pace", "Running pace from a distance and a time."),
           ("sleep_score", "Sleep quality score from last night's sleep.")]
WEATHER = [("get_weather", "Current weather conditions for a city."),
           ("weather_forecast", "Weather forecast for the next days in a city."),
           ("hourly_temperature", "Hourly temperature forecast for a location."),
           ("weather.rain_chance", "Chance of rain in a city over the coming days."),
           ("weather.wind_speed", "Wind speed forecast for a city."),
           ("uv_index", "Ultraviolet index forecast for a city.")]


@pytest.fixture(scope="module")
def neighbourhoods(stack, upload_admin):
    tenant = new_tenant(stack, upload_admin, prefix="tools")
    subjects = ["invoice", "flight", "recipe", "playlist", "vehicle", "certificate", "warehouse", "podcast",
                "timesheet", "campaign", "parking spot", "tax return", "backup"]
    others = [(f"{v}_{s.replace(' ', '_')}", f"{v.capitalize()} a {s} of the user.")
              for v in ["get", "create", "delete", "update", "export"] for s in subjects]
    register(tenant, [{"name": name, "description": text} for name, text in WEATHER + FITNESS + others]
             + [t for t in CATALOGUE if t["name"] != "get_weather"])
    return tenant


def test_a_request_for_one_tool_gets_fewer_than_k(neighbourhoods):
    # compute_bmi stands far above its fitness neighbours (calorie needs, ideal weight, body fat: each over
    # the threshold, none near the best): the tail cut (TAIL_SHARE) sends the one tool, and the token
    # account counts what is sent. Without the cut the neighbours fill the k places.
    body = select(neighbourhoods, "Compute the BMI of a person 180 cm tall weighing 75 kg", k=4)
    assert body["fallback"] is None and body["confident"] is True
    names = [t["name"] for t in body["tools"]]
    assert names == ["compute_bmi"], names
    assert body["count"] == 1
    assert body["tokens"]["selected"] == body["tools"][0]["tokens"]
    assert body["tokens"]["reduction"] == round(1 - body["tools"][0]["tokens"] / body["tokens"]["registry"], 4)


def test_an_ambiguous_request_still_gets_k(neighbourhoods):
    # Several weather tools answer "what will the weather be like" about equally: none is cut, the k
    # places are filled. A request nothing matches confidently keeps its k too (the flagged shortlist).
    body = select(neighbourhoods, "What will the weather be like in Paris tomorrow?", k=3)
    assert body["fallback"] is None
    names = [t["name"] for t in body["tools"]]
    assert len(names) == 3 and set(names) <= {name for name, _ in WEATHER}, names
    unsure = select(neighbourhoods, "How healthy am I?", k=4)
    assert unsure["fallback"] == "not_confident_shortlist" and unsure["count"] == 4


def test_the_search_worker_selects_tools_on_the_int8_graph(stack, shop):
    """The worker made the quantized encoder at start-up and says so; a select still finds the tool a plain request asks for (bindings/quantized_query.py)."""
    import json
    import urllib.request

    with urllib.request.urlopen(stack.url("search") + "/health", timeout=30) as resp:
        health = json.loads(resp.read())
    assert health["bindings"]["AI"]["select_query_graph"] == "int8"
    assert [t["name"] for t in select(shop, "what's the weather like in Oslo today?", k=1)["tools"]] == ["get_weather"]



async def test_a_catalogue_registered_with_another_model_is_refused_until_registered_again(stack, upload_admin, db):
    # as after `edgeindex models cutover`: the stored tool vectors are of another model than the serving one
    tenant = new_tenant(stack, upload_admin, prefix="toolmodel")
    catalogue = [{**CATALOGUE[0], "examples": ["is it raining in Bergen?"]}, *CATALOGUE[1:3]]
    register(tenant, catalogue)
    await db.execute("UPDATE tools SET model_id = 'intfloat/multilingual-e5-small', content_hash = 'of-e5' "
                     "WHERE entity_id = %s", (tenant.entity_id,))
    await db.execute("UPDATE tool_examples SET model_id = 'intfloat/multilingual-e5-small', "
                     "embedding = array_fill(0.05, ARRAY[384])::vector WHERE entity_id = %s", (tenant.entity_id,))
    await db.execute("UPDATE catalog_versions SET version = version + 1 WHERE entity_id = %s AND kind = 'tools'",
                     (tenant.entity_id,))
    status, body = tenant.search.post("/tools/select", {"query": "weather in Oslo", "entity_ids": [tenant.entity_id]})
    assert status == 409, body
    assert body["field"] == "model" and "register them again" in json.dumps(body)
    register(tenant, catalogue)
    assert select(tenant, "weather in Oslo")["tools"][0]["name"] == "get_weather"
    # the definitions' examples are embedded again too, with the serving model's vectors
    examples = await db.fetch("SELECT model_id, embedding = array_fill(0.05, ARRAY[384])::vector AS stale "
                              "FROM tool_examples WHERE entity_id = %s", (tenant.entity_id,))
    assert len(examples) == 1 and (examples[0]["model_id"], examples[0]["stale"]) == (
        "sentence-transformers/all-MiniLM-L6-v2", False)
