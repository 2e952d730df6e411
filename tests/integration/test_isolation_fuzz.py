"""A bounded run of scripts/fuzz_isolation.py against the shared stack: no search ever leaks."""

from __future__ import annotations

import importlib.util
import sys

import aiohttp

from ..helpers import ROOT


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_isolation", ROOT / "scripts" / "fuzz_isolation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


async def test_generated_searches_never_see_another_tenants_chunks(stack):
    fuzz = _fuzz_module()
    async with aiohttp.ClientSession() as session:
        world = await fuzz.build_world(session, stack.url("upload"), stack.admin_key, tenants=6, seed=11)
    result = await fuzz.fuzz(world, stack.url("search"), searches=600, agents=4, seed=11)
    assert result["leaks"] == 0, result["examples"]
    # the generator really tried: refused requests and answered ones both occurred
    assert result["statuses"].get("403", 0) > 50 and result["statuses"].get("200", 0) > 200, result


def test_the_checker_catches_a_leak():
    fuzz = _fuzz_module()
    world = fuzz.World([fuzz.Tenant("a", "user", "m1", ["d"]), fuzz.Tenant("b", "user", "m2", ["d"])],
                       [], {("a", "d"): "a", ("b", "d"): "b"})
    key = fuzz.Key("secret", frozenset({"a"}))
    leaked = {"results": [{"entity_id": "b", "document_id": "d"}]}
    assert fuzz.check(world, key, {"query": "x"}, 200, leaked) is not None
    assert fuzz.check(world, key, {"query": "x", "entity_ids": ["b"]}, 200, {"results": []}) is not None
    assert fuzz.check(world, key, {"query": "x", "entity_ids": ["b"]}, 403, {}) is None
    assert fuzz.check(world, key, {"query": "x"}, 200, {"results": [{"entity_id": "a", "document_id": "d"}]}) is None
