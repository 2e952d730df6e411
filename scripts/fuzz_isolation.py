"""Tenant-isolation fuzz: thousands of generated searches and tool and index selections that try to
see another tenant's data.

Starts a fresh local stack (or uses --upload-url/--search-url/--admin-key of a running one),
makes tenants — users, groups, a network — with API keys of mixed grants (one entity, several,
some overlapping), uploads a few documents per tenant and registers two tools and an index
descriptor per tenant, each carrying a marker word of its own tenant, then sends --searches
generated searches and --selections generated tool/index selections and catalogue listings,
concurrently, mixing:

  - entity_ids that are granted, partly granted, not granted, absent (all granted), crafted
    (other tenants' ids with case, whitespace, unicode look-alikes, duplicates, SQL-ish text);
  - filters naming other tenants' document ids (document_ids, exclude_document_ids);
  - queries with other tenants' marker words, and the same query from many keys so that
    caches (exact and semantic) are warmed by other tenants first;
  - cache on and off, alpha 0 / 1 / mixed;
  - POST /tools/select and /indices/select with the same entity lists and other tenants' tool and
    index names in the query (a named tool is chosen first, if the key may see it); GET
    /entities/{e}/tools and /indices for granted, other and crafted entities.

Then router feedback (--feedbacks): for answered searches, another key judges the search (must be
404: a search is its own key's), its own key judges it (200, scoped to its own grant; a search over
several entities never steps the deployment's model), and judges it again (409: once per search).

Every answer is checked: a request naming an entity outside its key's grant must be 403 (or
400 for a malformed id); a 200 may only hold chunks, tools or indices of entities both granted
and requested (all granted when none were named), of documents of those entities. Anything
else is a leak.

Requests go through the project's SDK (edgeindex_client.AsyncClient) as a user's would; only the
tool and index registry routes, which the SDK does not cover, are called over plain HTTP.

  .venv/bin/python scripts/fuzz_isolation.py                       # 10,000 searches, 2,500 selections
  .venv/bin/python scripts/fuzz_isolation.py --searches 500 --selections 200 --feedbacks 100 --agents 4

Ends with one JSON line: {"searches", "selections", "feedbacks", "leaks": 0, "statuses": {…}, "by_kind": {…},
"req_per_s"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from edgeindex_client import APIError, AsyncClient

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["harbour", "glacier", "orchard", "lantern", "compass", "meadow", "canyon", "beacon", "quarry", "delta"]


@dataclass
class Tenant:
    entity_id: str
    kind: str
    marker: str
    documents: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    indices: list[str] = field(default_factory=list)


@dataclass
class Key:
    secret: str
    grant: frozenset[str]


@dataclass
class World:
    tenants: list[Tenant]
    keys: list[Key]
    owner: dict[tuple[str, str], str]   # (entity, document) → entity, for the checks
    tool_owner: dict[str, str] = field(default_factory=dict)    # tool name → entity (names are unique here)
    index_owner: dict[str, str] = field(default_factory=dict)   # index name → entity


async def build_world(upload_url: str, search_url: str, admin_key: str, *, tenants: int, seed: int) -> World:
    rng = random.Random(seed)
    run = f"iso{seed}-{int(time.time())}"
    made: list[Tenant] = []
    kinds = ["user"] * (tenants - 3) + ["group", "group", "network"]
    owner: dict[tuple[str, str], str] = {}
    async with AsyncClient(admin_key, upload_url=upload_url, search_url=search_url, max_retries=0) as admin:
        for i, kind in enumerate(kinds):
            tenant = Tenant(f"{run}-{kind[0]}{i}", kind, f"zq{rng.randrange(10**6):06d}x{i}")
            await admin.create_entity(tenant.entity_id, kind, name=tenant.entity_id)
            made.append(tenant)
        for tenant in made:
            for d in range(3):
                document_id = f"doc-{d}" if d < 2 else f"{tenant.entity_id}/private notes.txt"
                text = (f"{tenant.marker} {WORDS[d]} report of {tenant.entity_id}. The {WORDS[d]} survey by "
                        f"{tenant.marker} lists findings, numbers {d}{d}{d} and the owner {tenant.entity_id}.")
                await admin.upload_text(tenant.entity_id, document_id, text)
                tenant.documents.append(document_id)
                owner[(tenant.entity_id, document_id)] = tenant.entity_id
        keys: list[Key] = []
        ids = [t.entity_id for t in made]
        for tenant in made:  # one key per tenant, and keys over overlapping sets
            keys.append(Key((await admin.create_key("isolation fuzz", [tenant.entity_id])).key,
                            frozenset([tenant.entity_id])))
        for _ in range(len(made)):
            grant = rng.sample(ids, rng.randint(2, 4))
            keys.append(Key((await admin.create_key("isolation fuzz", grant)).key, frozenset(grant)))
        world = World(made, keys, owner)
        await register_catalogues(world, search_url, admin_key)
        for tenant in made:  # wait until every document is searchable
            for document_id in tenant.documents:
                await admin.wait_ready(tenant.entity_id, document_id, timeout=300)
    return world


async def register_catalogues(world: World, search_url: str, admin_key: str) -> None:
    """Two tools and an index per tenant, named and described with its marker. Plain HTTP: the SDK
    has no methods for the registry routes (it selects, it does not administer catalogues)."""
    async with httpx.AsyncClient(base_url=search_url, headers={"Authorization": f"Bearer {admin_key}"},
                                 timeout=120) as http:
        for tenant in world.tenants:
            tools = [{"name": f"{tenant.marker}_{verb}", "description": f"{verb.title()} the {WORDS[n]} records of "
                      f"{tenant.marker} for {tenant.entity_id}", "parameters": [{"name": "record_id", "type": "string"}]}
                     for n, verb in enumerate(["lookup", "archive"])]
            indices = [{"name": f"{tenant.marker}_survey", "description": f"{WORDS[2]} surveys of {tenant.marker}",
                        "fields": ["survey_id", f"{tenant.marker}_owner", "findings"]}]
            for path, body in ((f"/entities/{_quote(tenant.entity_id)}/tools", {"tools": tools}),
                               (f"/entities/{_quote(tenant.entity_id)}/indices", {"indices": indices})):
                resp = await http.post(path, json=body)
                assert resp.status_code == 200, resp.text
            tenant.tools = [t["name"] for t in tools]
            tenant.indices = [i["name"] for i in indices]
            world.tool_owner.update({name: tenant.entity_id for name in tenant.tools})
            world.index_owner.update({name: tenant.entity_id for name in tenant.indices})


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _crafted(entity_id: str, rng: random.Random) -> str:
    return rng.choice([entity_id.upper(), f" {entity_id}", f"{entity_id} ", entity_id.replace("-", "\u2010"),
                       f"{entity_id}'--", f"{entity_id}%", entity_id + "\u0000", "*", "%", entity_id[:-1]])


def _entities(body: dict, key: Key, world: World, rng: random.Random) -> list[Tenant]:
    """Set ``entity_ids`` (or not) the ways a probe would; returns the tenants outside the grant."""
    others = [t for t in world.tenants if t.entity_id not in key.grant]
    shape = rng.random()
    granted = sorted(key.grant)
    if shape < 0.25:
        pass  # all granted entities
    elif shape < 0.5:
        body["entity_ids"] = rng.sample(granted, rng.randint(1, len(granted)))
    elif shape < 0.7 and others:
        body["entity_ids"] = rng.sample(granted, 1) + [rng.choice(others).entity_id]
    elif shape < 0.85:
        body["entity_ids"] = [_crafted(rng.choice(world.tenants).entity_id, rng)]
    else:
        body["entity_ids"] = granted * 2  # duplicates
    return others


def generate(world: World, rng: random.Random) -> tuple[Key, dict]:
    """One search: a key, and a body that may try to reach beyond the key's grant."""
    key = rng.choice(world.keys)
    target = rng.choice(world.tenants)
    body: dict = {"query": rng.choice([f"{target.marker} {rng.choice(WORDS)}", f"{rng.choice(WORDS)} survey",
                                       f"report of {target.entity_id}", target.marker]),
                  "k": rng.choice([1, 5, 20]), "cache": rng.random() < 0.8,
                  "alpha": rng.choice([0.0, 1.0, 0.8, 0.5])}
    others = _entities(body, key, world, rng)
    if rng.random() < 0.3:
        foreign = rng.choice(others or world.tenants)
        name = rng.choice(["document_ids", "exclude_document_ids"])
        body.setdefault("filters", {})[name] = rng.sample(foreign.documents, rng.randint(1, len(foreign.documents)))
    return key, body


def generate_selection(world: World, rng: random.Random) -> tuple[str, Key, dict]:
    """One tool or index selection, or a catalogue listing: (kind, key, body or {"entity_id"})."""
    key = rng.choice(world.keys)
    target = rng.choice(world.tenants)
    kind = rng.choices(["tools", "indices", "list-tools", "list-indices"], weights=[4, 4, 1, 1])[0]
    if kind.startswith("list-"):
        entity = rng.choice(world.tenants).entity_id
        return kind, key, {"entity_id": _crafted(entity, rng) if rng.random() < 0.15 else entity}
    named = rng.choice(target.tools if kind == "tools" else target.indices)
    body: dict = {"query": rng.choice([f"{named} for {target.marker}", f"{WORDS[rng.randrange(3)]} records of "
                                       f"{target.entity_id}", f"call {named} then {rng.choice(WORDS)} survey",
                                       target.marker]),
                  "k": rng.choice([1, 3, 5])}
    _entities(body, key, world, rng)
    return kind, key, body


def check_selection(world: World, kind: str, key: Key, body: dict, status: int, answer: dict) -> str | None:
    """None if a selection or listing is allowed; otherwise what leaked or went wrong."""
    if status >= 500:
        return f"server error {status}: {answer}"
    if kind.startswith("list-"):
        if body["entity_id"] not in key.grant:
            return None if status in (400, 403) else f"status {status} listing {body['entity_id']!r} outside the grant"
        if status != 200:
            return f"status {status}: {answer}"
        allowed, field_, owners = {body["entity_id"]}, kind[5:], world.tool_owner if kind == "list-tools" \
            else world.index_owner
    else:
        requested = body.get("entity_ids")
        if requested is not None and not set(requested) <= key.grant:
            return None if status in (400, 403) else \
                f"status {status} for entities outside the grant {sorted(set(requested) - key.grant)}"
        if status == 400:
            return None
        if status != 200:
            return f"status {status}: {answer}"
        allowed = set(requested) if requested is not None else set(key.grant)
        field_, owners = kind, world.tool_owner if kind == "tools" else world.index_owner
    for item in answer.get(field_, []):
        if owners.get(item["name"]) not in allowed:
            return f"{field_[:-1] if field_ == 'tools' else 'index'} {item['name']!r} of " \
                   f"{owners.get(item['name'])} outside {sorted(allowed)}"
    return None


def check(world: World, key: Key, body: dict, status: int, answer: dict) -> str | None:
    """None if the answer is allowed; otherwise what leaked or went wrong."""
    requested = body.get("entity_ids")
    if status >= 500:
        return f"server error {status}: {answer}"
    if requested is not None and not set(requested) <= key.grant:
        if status in (400, 403):
            return None
        return f"status {status} for entities outside the grant {sorted(set(requested) - key.grant)}"
    if status == 400:
        return None  # a malformed request, refused
    if status != 200:
        return f"status {status}: {answer}"
    allowed = set(requested) if requested is not None else set(key.grant)
    for result in answer["results"]:
        if result["entity_id"] not in allowed:
            return f"result of entity {result['entity_id']} outside {sorted(allowed)}"
        if world.owner.get((result["entity_id"], result["document_id"])) != result["entity_id"]:
            return f"document {result['document_id']!r} is not one of {result['entity_id']}'s"
    return None


async def _search(client: AsyncClient, body: dict) -> tuple[int, dict]:
    try:
        found = await client.search(**body)
    except APIError as exc:  # the SDK keeps the status and the JSON error body
        return exc.status, exc.body if isinstance(exc.body, dict) else {}
    return 200, found.model_dump(mode="json")


async def _selection(client: AsyncClient, http: httpx.AsyncClient, kind: str, body: dict) -> tuple[int, dict]:
    if kind.startswith("list-"):  # the catalogue listings are not in the SDK: plain HTTP
        resp = await http.get(f"/entities/{_quote(body['entity_id'])}/{kind[5:]}")
        return resp.status_code, resp.json()
    try:
        if kind == "tools":
            chosen = await client.select_tools(**body)
        else:
            chosen = await client.select_index(**body)
    except APIError as exc:
        return exc.status, exc.body if isinstance(exc.body, dict) else {}
    return 200, chosen.model_dump(mode="json")


@dataclass
class Answered:
    """A search that answered with results: what its feedback may name."""

    key: Key
    search_id: str
    entity_ids: list[str]
    chunk_ids: list[str]


def check_feedback(who: str, answered: Answered, status: int, answer: dict) -> str | None:
    """None if a feedback was answered as it must be: ``who`` is foreign, first or repeat."""
    expected = {"foreign": 404, "first": 200, "repeat": 409}[who]
    if status != expected:
        return f"{who} feedback answered {status}, not {expected}: {answer}"
    if who == "foreign" and answer.get("field") != "search_id":
        return f"a foreign search_id's 404 names {answer.get('field')!r}, not search_id"
    if who != "first":
        return None
    scope = answer.get("scope")
    if scope is None:
        if answer.get("applied_in_version") is not None:
            return f"a tenant's feedback stepped the deployment's model to {answer['applied_in_version']}"
    elif scope not in answered.key.grant or answered.entity_ids != [scope]:
        return f"feedback scoped to {scope!r}, outside the search's entities {answered.entity_ids}"
    return None


async def fuzz_feedback(world: World, answered: list[Answered], clients: dict, rng: random.Random,
                        statuses: Counter, by_kind: Counter, leaks: list[str]) -> int:
    """Each answered search judged by another key, by its own key, then by its own key again."""
    secrets = [k.secret for k in world.keys]
    for item in answered:
        foreign = rng.choice([s for s in secrets if s != item.key.secret and s in clients] or [None])
        body = {"search_id": item.search_id, "useful": item.chunk_ids[:1], "not_useful": item.chunk_ids[1:2]}
        turns = ([("foreign", foreign)] if foreign else []) + [("first", item.key.secret), ("repeat", item.key.secret)]
        for who, secret in turns:
            resp = await clients[secret][1].post("/feedback", json=body)
            answer = resp.json()
            statuses[resp.status_code] += 1
            by_kind[f"feedback-{who} {resp.status_code}"] += 1
            if (problem := check_feedback(who, item, resp.status_code, answer)) is not None:
                leaks.append(f"feedback: {problem} (search {item.search_id})")
    return len(answered)


async def fuzz(world: World, search_url: str, *, searches: int, agents: int, seed: int,
               selections: int = 0, feedbacks: int = 0) -> dict:
    rng = random.Random(seed + 1)
    plan = [("search", *generate(world, rng)) for _ in range(searches)]
    plan += [generate_selection(world, rng) for _ in range(selections)]
    rng.shuffle(plan)
    statuses: Counter = Counter()
    by_kind: Counter = Counter()
    leaks: list[str] = []
    queue = iter(plan)
    answered: list[Answered] = []
    clients: dict[str, tuple[AsyncClient, httpx.AsyncClient]] = {}
    started = time.perf_counter()

    async def agent():
        for kind, key, body in queue:
            if key.secret not in clients:
                clients[key.secret] = (AsyncClient(key.secret, search_url=search_url, max_retries=0, timeout=60),
                                       httpx.AsyncClient(base_url=search_url, timeout=60,
                                                         headers={"Authorization": f"Bearer {key.secret}"}))
            client, http = clients[key.secret]
            if kind == "search":
                status, answer = await _search(client, body)
                problem = check(world, key, body, status, answer)
                if status == 200 and answer["results"]:
                    answered.append(Answered(key, answer["search_id"], answer["entity_ids"],
                                             [r["chunk_id"] for r in answer["results"]]))
            else:
                status, answer = await _selection(client, http, kind, body)
                problem = check_selection(world, kind, key, body, status, answer)
            statuses[status] += 1
            by_kind[f"{kind} {status}"] += 1
            if problem is not None:
                leaks.append(f"{kind}: {problem} (request {json.dumps(body)[:300]})")

    try:
        await asyncio.gather(*(agent() for _ in range(agents)))
        judged = await fuzz_feedback(world, answered[:feedbacks], clients, rng, statuses, by_kind, leaks)
    finally:
        for client, http in clients.values():
            await client.aclose()
            await http.aclose()
    elapsed = time.perf_counter() - started
    return {"searches": searches, "selections": selections, "feedbacks": judged, "leaks": len(leaks),
            "examples": leaks[:5],
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "by_kind": dict(sorted(by_kind.items())),
            "req_per_s": round(len(plan) / elapsed, 1)}


async def main_async(args) -> dict:
    world = await build_world(args.upload_url, args.search_url, args.admin_key, tenants=args.tenants, seed=args.seed)
    return await fuzz(world, args.search_url, searches=args.searches, agents=args.agents, seed=args.seed,
                      selections=args.selections, feedbacks=args.feedbacks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=10_000)
    parser.add_argument("--selections", type=int, default=2_500,
                        help="tool and index selections and catalogue listings, besides the searches")
    parser.add_argument("--feedbacks", type=int, default=500,
                        help="answered searches whose router feedback is tried by another key, then twice by its own")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--upload-url")
    parser.add_argument("--search-url")
    parser.add_argument("--admin-key")
    args = parser.parse_args()
    if args.upload_url:
        result = asyncio.run(main_async(args))
    else:
        sys.path.insert(0, str(ROOT))
        from tests.helpers import running_stack

        with tempfile.TemporaryDirectory() as state, running_stack(Path(state)) as stack:
            args.upload_url, args.search_url = stack.url("upload"), stack.url("search")
            args.admin_key = stack.admin_key
            result = asyncio.run(main_async(args))
    for example in result.pop("examples"):
        print("LEAK:", example)
    print(f"{result['searches']} searches, {result['selections']} selections and listings, "
          f"{result['feedbacks']} searches judged, {result['leaks']} leaks, "
          f"statuses {result['statuses']}, {result['req_per_s']} req/s")
    print("by kind and status:", result["by_kind"])
    print(json.dumps(result))
    sys.exit(1 if result["leaks"] else 0)


if __name__ == "__main__":
    main()
