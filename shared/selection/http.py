"""What the search worker's tool and index routes do, one function each.

The worker only authenticates and reads the body; these check the grant and call the
registry / selection functions with the bindings they use.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..search.service import resolve_entities
from ..tenancy import Principal
from . import indices, tools

MAX_REGISTER_BYTES = 8_000_000
MAX_SELECT_BYTES = 64_000


def _one_entity(principal: Principal, entity: str) -> str:
    return principal.check([entity], field="entity")[0]


async def register_tools(env: Any, principal: Principal, entity: str, body: dict) -> dict:
    return await tools.register(env.DB, env.AI.embedder, _one_entity(principal, entity), body)


async def list_tools(env: Any, principal: Principal, entity: str) -> dict:
    return await tools.list_tools(env.DB, _one_entity(principal, entity))


async def delete_tool(env: Any, principal: Principal, entity: str, name: str) -> dict:
    return await tools.delete_tools(env.DB, _one_entity(principal, entity), [name])


async def delete_tools(env: Any, principal: Principal, entity: str, body: dict) -> dict:
    names = body.get("names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValidationError("names must be a non-empty list of tool names", field="names")
    return await tools.delete_tools(env.DB, _one_entity(principal, entity), names)


async def select_tools(env: Any, principal: Principal, body: dict) -> dict:
    request = tools.parse_select(body)
    entity_ids = resolve_entities(principal, request.entity_ids)
    return await tools.select(env.DB, env.AI.embedder, entity_ids, request)


async def tool_feedback(env: Any, principal: Principal, body: dict) -> dict:
    requested = body.get("entity_ids")
    if requested is not None and (not isinstance(requested, list) or not requested):
        raise ValidationError("entity_ids must be a non-empty list of entity ids", field="entity_ids")
    entity_ids = resolve_entities(principal, requested)
    return await tools.feedback(env.DB, env.AI.embedder, entity_ids, body)


async def register_indices(env: Any, principal: Principal, entity: str, body: dict) -> dict:
    return await indices.register(env.DB, env.AI.embedder, _one_entity(principal, entity), body)


async def list_indices(env: Any, principal: Principal, entity: str) -> dict:
    return await indices.list_indices(env.DB, _one_entity(principal, entity))


async def delete_index(env: Any, principal: Principal, entity: str, name: str) -> dict:
    return await indices.delete_indices(env.DB, _one_entity(principal, entity), [name])


async def select_indices(env: Any, principal: Principal, body: dict) -> dict:
    request = indices.parse_select(body)
    entity_ids = resolve_entities(principal, request.entity_ids)
    return await indices.select(env.DB, env.AI.embedder, entity_ids, request, llm=getattr(env.AI, "llm", None))
