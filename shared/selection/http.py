"""The search worker's tool and index routes as one service with explicit dependencies.

``SelectionService(db, embedder, llm)`` is built once at the worker's start-up; the
worker authenticates and reads the body, these check the grant and call the registry
and selection functions with what they use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..tenancy import Principal, resolve_existing_entities
from ..validation import parse
from . import collections, indices, tools
from .models import (
    CollectionDescription,
    CollectionPath,
    IndexSelectRequest,
    IndicesRegisterRequest,
    ToolFeedbackRequest,
    ToolSelectRequest,
    ToolsRegisterRequest,
)

MAX_REGISTER_BYTES = 8_000_000
MAX_SELECT_BYTES = 64_000


def _one_entity(principal: Principal, entity: str) -> str:
    return principal.check([entity], field="entity")[0]


@dataclass(frozen=True)
class SelectionService:
    db: Any
    embedder: Any
    llm: Any = None          # decides between indices when the scores are not confident (optional)
    kv: Any = None           # a collection's new description retires the entity's cached searches

    async def list_collections(self, principal: Principal, entity: str) -> dict:
        return await collections.list_collections(self.db, _one_entity(principal, entity))

    async def get_collection(self, principal: Principal, entity: str, name: str) -> dict:
        return await collections.get_collection(self.db, _one_entity(principal, entity),
                                                parse(CollectionPath, {"name": name}).name)

    async def describe_collection(self, principal: Principal, entity: str, name: str, body: dict) -> dict:
        entity_id = _one_entity(principal, entity)
        name = parse(CollectionPath, {"name": name}).name
        request = parse(CollectionDescription, body)
        return await collections.set_description(self.db, self.embedder, self.kv, entity_id, name,
                                                 request.description)

    async def register_tools(self, principal: Principal, entity: str, body: dict) -> dict:
        entity_id = _one_entity(principal, entity)
        parse(ToolsRegisterRequest, body)
        return await tools.register(self.db, self.embedder, entity_id, body)

    async def list_tools(self, principal: Principal, entity: str) -> dict:
        return await tools.list_tools(self.db, _one_entity(principal, entity))

    async def delete_tool(self, principal: Principal, entity: str, name: str) -> dict:
        return await tools.delete_tools(self.db, _one_entity(principal, entity), [name])

    async def select_tools(self, principal: Principal, body: dict) -> dict:
        given = parse(ToolSelectRequest, body)
        entity_ids = await resolve_existing_entities(self.db, principal, given.entity_ids)
        threshold = tools.DEFAULT_THRESHOLD if given.threshold is None else given.threshold
        request = tools.SelectRequest(given.query, given.entity_ids, given.k, threshold, given.threshold is None,
                                      given.include_requirements, given.expand_categories,
                                      given.whole_registry_when_unsure, given.max_tokens, tuple(given.exclude),
                                      given.search_tool)
        return await tools.select(self.db, self.embedder, entity_ids, request)

    async def tool_feedback(self, principal: Principal, body: dict) -> dict:
        given = parse(ToolFeedbackRequest, body)
        entity_ids = await resolve_existing_entities(self.db, principal, given.entity_ids)
        return await tools.feedback(self.db, self.embedder, entity_ids, given.model_dump())

    async def register_indices(self, principal: Principal, entity: str, body: dict) -> dict:
        entity_id = _one_entity(principal, entity)
        given = parse(IndicesRegisterRequest, body)
        return await indices.register(self.db, self.embedder, entity_id,
                                      {"indices": [d.model_dump() for d in given.indices]})

    async def list_indices(self, principal: Principal, entity: str) -> dict:
        return await indices.list_indices(self.db, _one_entity(principal, entity))

    async def delete_index(self, principal: Principal, entity: str, name: str) -> dict:
        return await indices.delete_indices(self.db, _one_entity(principal, entity), [name])

    async def select_indices(self, principal: Principal, body: dict) -> dict:
        given = parse(IndexSelectRequest, body)
        entity_ids = await resolve_existing_entities(self.db, principal, given.entity_ids)
        request = indices.SelectRequest(given.query, given.entity_ids, given.k)
        return await indices.select(self.db, self.embedder, entity_ids, request, llm=self.llm)
