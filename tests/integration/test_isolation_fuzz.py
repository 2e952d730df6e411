"""A bounded run of scripts/fuzz_isolation.py against the shared stack: no search, tool or index
selection or catalogue listing ever leaks."""

from __future__ import annotations

import importlib.util
import re
import sys

from ..helpers import ROOT, logged_around


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_isolation", ROOT / "scripts" / "fuzz_isolation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


async def test_generated_searches_and_selections_never_see_another_tenants_data(stack):
    fuzz = _fuzz_module()
    world = await fuzz.build_world(stack.url("upload"), stack.url("search"), stack.admin_key, tenants=6, seed=11)
    result = await fuzz.fuzz(world, stack.url("search"), searches=600, selections=300, agents=4, seed=11,
                             feedbacks=60)
    assert result["leaks"] == 0, (result["examples"], logged_around(
        stack, re.findall(r"req_[0-9a-f]+", " ".join(result["examples"]))))
    # the generator really tried: refused requests and answered ones both occurred, for every kind
    assert result["statuses"].get("403", 0) > 50 and result["statuses"].get("200", 0) > 200, result
    assert result["feedbacks"] == 60, result
    for who, status in (("foreign", 404), ("first", 200), ("repeat", 409)):
        assert result["by_kind"].get(f"feedback-{who} {status}", 0) >= 50, result
    for kind in ("search", "tools", "indices", "list-tools", "list-indices"):
        assert result["by_kind"].get(f"{kind} 200", 0) > 0 and result["by_kind"].get(f"{kind} 403", 0) > 0, result


def test_the_feedback_checker_catches_a_foreign_or_repeated_judgement_that_is_taken():
    fuzz = _fuzz_module()
    item = fuzz.Answered(fuzz.Key("s", frozenset({"a", "b"})), "id", ["a", "b"], ["c1"])
    assert fuzz.check_feedback("foreign", item, 200, {"scope": None}) is not None
    assert fuzz.check_feedback("repeat", item, 200, {"scope": None}) is not None
    assert fuzz.check_feedback("first", item, 200, {"scope": None, "applied_in_version": 3}) is not None
    assert fuzz.check_feedback("first", item, 200, {"scope": "a"}) is not None  # scoped to one of two
    assert fuzz.check_feedback("first", item, 200, {"scope": None, "applied_in_version": None}) is None


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


def test_the_selection_checker_catches_a_leak():
    fuzz = _fuzz_module()
    world = fuzz.World([fuzz.Tenant("a", "user", "m1"), fuzz.Tenant("b", "user", "m2")], [], {},
                       tool_owner={"m1_lookup": "a", "m2_lookup": "b"}, index_owner={"m1_survey": "a",
                                                                                      "m2_survey": "b"})
    key = fuzz.Key("secret", frozenset({"a"}))
    check = fuzz.check_selection
    assert check(world, "tools", key, {"query": "x"}, 200, {"tools": [{"name": "m2_lookup"}]}) is not None
    assert check(world, "tools", key, {"query": "x"}, 200, {"tools": [{"name": "m1_lookup"}]}) is None
    assert check(world, "indices", key, {"query": "x"}, 200, {"indices": [{"name": "m2_survey"}]}) is not None
    assert check(world, "indices", key, {"query": "x", "entity_ids": ["b"]}, 200, {"indices": []}) is not None
    assert check(world, "indices", key, {"query": "x", "entity_ids": ["b"]}, 403, {}) is None
    assert check(world, "list-tools", key, {"entity_id": "b"}, 200, {"tools": []}) is not None
    assert check(world, "list-tools", key, {"entity_id": "b"}, 403, {}) is None
    assert check(world, "list-indices", key, {"entity_id": "a"}, 200, {"indices": [{"name": "m2_survey"}]}) is not None
