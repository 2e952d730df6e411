"""The MCP tool list: schemas generated from the route models, descriptions that cannot drift, and
its size in tokens (printed; run with -s to see it)."""

from __future__ import annotations

import pytest
from edgeindex.mcp_server import tools
from edgeindex.search.request import SearchRequest
from edgeindex.trajectories.service import TrajectorySearchRequest
from edgeindex.validation import ENTITY_ID_PATTERN


def test_every_tool_schema_is_its_model_compacted():
    for name, (model, _) in tools.TOOLS.items():
        schema = tools.input_schema(model, {})
        full = model.model_json_schema()
        assert set(schema["properties"]) == set(model.model_fields), name
        assert schema.get("required", []) == full.get("required", []), name
        assert "$defs" not in schema and "$ref" not in str(schema), name
        assert not list(_titles(schema)), name


def _titles(node, path=""):
    """Pydantic's generated titles (a string under "title"; a property named title is a dict)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                yield path
            yield from _titles(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _titles(value, f"{path}.{i}")


def test_search_schema_keeps_the_constraints_the_route_enforces():
    props = tools.input_schema(tools.SearchArgs, tools.SEARCH)["properties"]
    assert props["alpha"]["minimum"] == 0 and props["alpha"]["maximum"] == 1
    assert props["fusion"]["enum"] == ["linear", "rrf"]
    assert props["entity_ids"]["items"]["pattern"] == ENTITY_ID_PATTERN
    assert props["include"]["properties"]["neighbours"]["maximum"] == 3
    assert props["filters"]["additionalProperties"] is False
    assert props["k"]["description"] == tools.SEARCH["k"]
    assert set(props) == set(TrajectorySearchRequest.model_fields) | {"diagnostics"}
    assert props["trajectory"]["pattern"] == TrajectorySearchRequest.model_json_schema()["properties"][
        "trajectory"]["anyOf"][0]["pattern"]


def test_a_description_for_a_field_the_model_lost_is_an_error():
    with pytest.raises(KeyError, match="filters.colour"):
        tools.input_schema(SearchRequest, {"filters.colour": "gone"})
    with pytest.raises(KeyError, match="topk"):
        tools.input_schema(SearchRequest, {"topk": "renamed"})


def test_tool_list_size_in_tokens():
    count, chars = tools.tool_list_tokens()
    print(f"\nMCP tool list: {len(tools.TOOLS)} tools, {count} tokens (cl100k_base), {chars} characters")
    # the budget a desktop agent pays on every turn; raise it knowingly (search's outputSchema: ~250 tokens,
    # paid once per session for answers that are each half as long; find_tools: ~100 tokens, which let an
    # unsure select_tools answer send k definitions instead of a whole registry; trajectories: ~520 tokens
    # for search's trajectory and seen, its step's account in the outputSchema, and the expand and
    # trajectory tools, so an agent's later searches stop repeating what it has read; history: ~125 tokens
    # for the changes tool and search's as_of, so an agent that read a document asks what changed since)
    assert 0 < count < 3500
