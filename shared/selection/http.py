"""The search worker's tool and index routes as one service with explicit dependencies.

``SelectionService(db, embedder, llm)`` is built once at the worker's start-up; the
worker authenticates and reads the body, these check the grant and call the registry
and selection functions with what they use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..search.service import resolve_entities
from ..tenancy import Principal
from . import indices, tools

MAX_REGISTER_BYTES = 8_000_000
MAX_SELECT_BYTES = 64_000


def _one_entity(principal: Principal, entity: str) -> str:
    return principal.check([entity], field="entity")[0]


@dataclass(frozen=True)
class SelectionService:
    db: Any
    embedder: Any
    llm: Any = None          # decides between indices when the scores are not confident (optional)

    async def register_tools(self, principal: Principal, entity: str, body: dict) -> dict:
        return await tools.register(self.db, self.embedder, _one_entity(principal, entity), body)

    async def list_tools(self, principal: Principal, entity: str) -> dict:
        return await tools.list_tools(self.db, _one_entity(principal, entity))

    async def delete_tool(self, principal: Principal, entity: str, name: str) -> dict:
        return await tools.delete_tools(self.db, _one_entity(principal, entity), [name])

    async def select_tools(self, principal: Principal, body: dict) -> dict:
        request = tools.parse_select(body)
        entity_ids = resolve_entities(principal, request.entity_ids)
        return await tools.select(self.db, self.embedder, entity_ids, request)

    async def tool_feedback(self, principal: Principal, body: dict) -> dict:
        requested = body.get("entity_ids")
        if requested is not None and (not isinstance(requested, list) or not requested):
            raise ValidationError("entity_ids must be a non-empty list of entity ids", field="entity_ids")
        entity_ids = resolve_entities(principal, requested)
        return await tools.feedback(self.db, self.embedder, entity_ids, body)

    async def register_indices(self, principal: Principal, entity: str, body: dict) -> dict:
        return await indices.register(self.db, self.embedder, _one_entity(principal, entity), body)

    async def list_indices(self, principal: Principal, entity: str) -> dict:
        return await indices.list_indices(self.db, _one_entity(principal, entity))

    async def delete_index(self, principal: Principal, entity: str, name: str) -> dict:
        return await indices.delete_indices(self.db, _one_entity(principal, entity), [name])

    async def select_indices(self, principal: Principal, body: dict) -> dict:
        request = indices.parse_select(body)
        entity_ids = resolve_entities(principal, request.entity_ids)
        return await indices.select(self.db, self.embedder, entity_ids, request, llm=self.llm)
