"""Tenant-isolation fuzz: thousands of generated searches that try to see another tenant's data.

Starts a fresh local stack (or uses --upload-url/--search-url/--admin-key of a running one),
makes tenants — users, groups, a network — with API keys of mixed grants (one entity, several,
some overlapping), uploads a few documents per tenant, each carrying a marker word of its own
tenant, then sends --searches generated searches, concurrently, mixing:

  - entity_ids that are granted, partly granted, not granted, absent (all granted), crafted
    (other tenants' ids with case, whitespace, unicode look-alikes, duplicates, SQL-ish text);
  - filters naming other tenants' document ids (document_ids, exclude_document_ids);
  - queries with other tenants' marker words, and the same query from many keys so that
    caches (exact and semantic) are warmed by other tenants first;
  - cache on and off, alpha 0 / 1 / mixed.

Every answer is checked: a request naming an entity outside its key's grant must be 403 (or
400 for a malformed id); a 200 may only hold chunks of entities both granted and requested
(all granted when none were named), of documents of those entities. Anything else is a leak.

  .venv/bin/python scripts/fuzz_isolation.py                       # 10,000 searches
  .venv/bin/python scripts/fuzz_isolation.py --searches 500 --agents 4

Ends with one JSON line: {"searches": …, "leaks": 0, "statuses": {…}, "req_per_s": …}.
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

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["harbour", "glacier", "orchard", "lantern", "compass", "meadow", "canyon", "beacon", "quarry", "delta"]


@dataclass
class Tenant:
    entity_id: str
    kind: str
    marker: str
    documents: list[str] = field(default_factory=list)


@dataclass
class Key:
    secret: str
    grant: frozenset[str]


@dataclass
class World:
    tenants: list[Tenant]
    keys: list[Key]
    owner: dict[tuple[str, str], str]   # (entity, document) → entity, for the checks


async def _json(session: aiohttp.ClientSession, method: str, url: str, key: str, body=None, data=None,
                headers=None) -> tuple[int, dict]:
    hdrs = {"Authorization": f"Bearer {key}", **(headers or {})}
    async with session.request(method, url, json=body, data=data, headers=hdrs) as resp:
        return resp.status, await resp.json(content_type=None)


async def build_world(session, upload_url: str, admin_key: str, *, tenants: int, seed: int) -> World:
    rng = random.Random(seed)
    run = f"iso{seed}-{int(time.time())}"
    made: list[Tenant] = []
    kinds = ["user"] * (tenants - 3) + ["group", "group", "network"]
    for i, kind in enumerate(kinds):
        tenant = Tenant(f"{run}-{kind[0]}{i}", kind, f"zq{rng.randrange(10**6):06d}x{i}")
        status, body = await _json(session, "POST", f"{upload_url}/admin/entities", admin_key,
                                   {"id": tenant.entity_id, "kind": kind, "name": tenant.entity_id})
        assert status == 201, body
        made.append(tenant)
    owner: dict[tuple[str, str], str] = {}
    for tenant in made:
        for d in range(3):
            document_id = f"doc-{d}" if d < 2 else f"{tenant.entity_id}/private notes.txt"
            text = (f"{tenant.marker} {WORDS[d]} report of {tenant.entity_id}. The {WORDS[d]} survey by "
                    f"{tenant.marker} lists findings, numbers {d}{d}{d} and the owner {tenant.entity_id}.")
            path = f"{upload_url}/entities/{tenant.entity_id}/documents/{_quote(document_id)}"
            status, body = await _json(session, "PUT", path, admin_key, data=text.encode(),
                                       headers={"Content-Type": "text/plain"})
            assert status == 202, body
            tenant.documents.append(document_id)
            owner[(tenant.entity_id, document_id)] = tenant.entity_id
    keys: list[Key] = []
    ids = [t.entity_id for t in made]
    for tenant in made:  # one key per tenant, and keys over overlapping sets
        keys.append(Key(await _make_key(session, upload_url, admin_key, [tenant.entity_id]),
                        frozenset([tenant.entity_id])))
    for _ in range(len(made)):
        grant = rng.sample(ids, rng.randint(2, 4))
        keys.append(Key(await _make_key(session, upload_url, admin_key, grant), frozenset(grant)))
    for tenant in made:  # wait until every document is searchable
        for document_id in tenant.documents:
            await _wait_ready(session, upload_url, admin_key, tenant.entity_id, document_id)
    return World(made, keys, owner)


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


async def _make_key(session, upload_url: str, admin_key: str, grant: list[str]) -> str:
    status, body = await _json(session, "POST", f"{upload_url}/admin/keys", admin_key,
                               {"name": "isolation fuzz", "entity_ids": grant})
    assert status == 201, body
    return body["key"]


async def _wait_ready(session, upload_url: str, admin_key: str, entity_id: str, document_id: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status, body = await _json(session, "GET", f"{upload_url}/entities/{entity_id}/documents/"
                                                   f"{_quote(document_id)}", admin_key)
        if status == 200 and body["status"] in ("ready", "failed"):
            assert body["status"] == "ready", body
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{entity_id}/{document_id} not ready in time")


def _crafted(entity_id: str, rng: random.Random) -> str:
    return rng.choice([entity_id.upper(), f" {entity_id}", f"{entity_id} ", entity_id.replace("-", "\u2010"),
                       f"{entity_id}'--", f"{entity_id}%", entity_id + "\u0000", "*", "%", entity_id[:-1]])


def generate(world: World, rng: random.Random) -> tuple[Key, dict]:
    """One search: a key, and a body that may try to reach beyond the key's grant."""
    key = rng.choice(world.keys)
    others = [t for t in world.tenants if t.entity_id not in key.grant]
    target = rng.choice(world.tenants)
    body: dict = {"query": rng.choice([f"{target.marker} {rng.choice(WORDS)}", f"{rng.choice(WORDS)} survey",
                                       f"report of {target.entity_id}", target.marker]),
                  "k": rng.choice([1, 5, 20]), "cache": rng.random() < 0.8,
                  "alpha": rng.choice([0.0, 1.0, 0.8, 0.5])}
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
    if rng.random() < 0.3:
        foreign = rng.choice(others or world.tenants)
        name = rng.choice(["document_ids", "exclude_document_ids"])
        body.setdefault("filters", {})[name] = rng.sample(foreign.documents, rng.randint(1, len(foreign.documents)))
    return key, body


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


async def fuzz(world: World, search_url: str, *, searches: int, agents: int, seed: int) -> dict:
    rng = random.Random(seed + 1)
    plan = [generate(world, rng) for _ in range(searches)]
    statuses: Counter = Counter()
    leaks: list[str] = []
    queue = iter(plan)
    started = time.perf_counter()

    async def agent(session):
        for key, body in queue:
            status, answer = await _json(session, "POST", f"{search_url}/search", key.secret, body)
            statuses[status] += 1
            if (problem := check(world, key, body, status, answer)) is not None:
                leaks.append(f"{problem} (request {json.dumps(body)[:300]})")

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(agent(session) for _ in range(agents)))
    elapsed = time.perf_counter() - started
    return {"searches": searches, "leaks": len(leaks), "examples": leaks[:5],
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "req_per_s": round(searches / elapsed, 1)}


async def main_async(args) -> dict:
    async with aiohttp.ClientSession() as session:
        world = await build_world(session, args.upload_url, args.admin_key, tenants=args.tenants, seed=args.seed)
    return await fuzz(world, args.search_url, searches=args.searches, agents=args.agents, seed=args.seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=10_000)
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
    print(f"{result['searches']} searches, {result['leaks']} leaks, statuses {result['statuses']}, "
          f"{result['req_per_s']} req/s")
    print(json.dumps(result))
    sys.exit(1 if result["leaks"] else 0)


if __name__ == "__main__":
    main()
