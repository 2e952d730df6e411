"""Request and response models of the selection routes (``/tools*``, ``/indices*``, ``/collections*``).

Requests are validated with ``validation.parse`` (one way to a 400 naming the field, as every
other route) and documented from the same models in OpenAPI; the MCP server's selection tools
take their input schemas from them too. A tool definition itself stays a JSON object here:
its shapes (plain, OpenAI, MCP) and its JSON Schema are checked by ``definitions.parse_tool``,
which names the field at fault the same way (``tools.3.parameters``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from ..validation import CollectionName, EntityId
from .definitions import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_TOOLS_PER_REQUEST

MAX_QUERY_CHARS = 4000
MAX_K = 50
Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
EntityIds = Annotated[list[EntityId], Field(min_length=1, max_length=100)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- requests ------------------------------------------------------------------------------------

class ToolSelectOptions(_Request):
    """What every interface of ``/tools/select`` takes (the MCP ``select_tools`` tool lists these)."""

    query: Query
    entity_ids: EntityIds | None = None
    k: Annotated[int, Field(ge=1, le=MAX_K)] = 5
    threshold: float | None = Field(None, description="fused z-score under which a tool is not sent "
                                                      "(default calibrated for the model)")
    include_requirements: bool = True
    expand_categories: bool = True
    max_tokens: Annotated[int, Field(ge=1)] | None = Field(None, description="most definition tokens to send "
                                                           "(cl100k_base); the first tool is always sent")

    @field_validator("threshold", mode="before")
    @classmethod
    def _number(cls, value: object) -> object:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class ToolSelectRequest(ToolSelectOptions):
    """``POST /tools/select``: the options, and how an unsure answer is made and what it leaves out."""

    whole_registry_when_unsure: bool = Field(False, description="with no confident choice, send every tool of a "
                                             "registry of at most 64 instead of the k best and a search tool")
    exclude: Annotated[list[Name], Field(max_length=MAX_TOOLS_PER_REQUEST)] = Field(
        default_factory=list, description="tools the agent holds already (names or aliases): never sent")
    search_tool: bool | None = Field(None, description="offer the find_tools search tool: null (default) with an "
                                     "unsure answer, true always, false never")


class ToolFeedbackRequest(_Request):
    query: Query
    entity_ids: EntityIds | None = None
    used: Annotated[list[Name], Field(max_length=MAX_K * 4)] = Field(
        description="tools the agent called, by name or alias")
    selected: Annotated[list[Name], Field(max_length=MAX_K * 4)] = Field(
        default_factory=list, description="tools it was given, by name or alias (counts as shown)")


class ToolsRegisterRequest(_Request):
    """``{"tools": [...]}`` (plain, OpenAI or MCP items), an MCP ``tools/list`` response
    (``{"result": {"tools": [...]}}``, as received, ``jsonrpc`` and ``id`` included) or ``{"tool": {...}}``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    tools: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=MAX_TOOLS_PER_REQUEST)] | None = None
    result: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    jsonrpc: str | None = None
    id: int | str | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> ToolsRegisterRequest:
        given = [name for name in ("tools", "result", "tool") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("send exactly one of tools (a list), result (an MCP tools/list result) or tool")
        return self


class IndexDescriptor(_Request):
    name: Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$")]
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_DESCRIPTION_CHARS)] = ""
    fields: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=512)]],
                      Field(max_length=2000)] = Field(default_factory=list, description="field or `table.column` names")
    tables: Annotated[list[Annotated[str, StringConstraints(min_length=1, max_length=512)]],
                      Field(max_length=2000)] = Field(default_factory=list, description="a database's table names")


class IndicesRegisterRequest(_Request):
    indices: Annotated[list[IndexDescriptor], Field(min_length=1, max_length=2000)]


class IndexSelectRequest(_Request):
    query: Query
    entity_ids: EntityIds | None = None
    k: Annotated[int, Field(ge=1, le=MAX_K)] = 5


class CollectionDescription(_Request):
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_DESCRIPTION_CHARS,
                                                  pattern=r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$")]


class CollectionPath(_Request):
    name: CollectionName


# --- responses -----------------------------------------------------------------------------------

Alias = Annotated[str, Field(description="the name an LLM calls the tool by: ^[a-zA-Z0-9_-]{1,64}$, "
                                         "unique in the entity (feedback takes it as well as the name)")]


class ToolStatus(_Body):
    name: str
    alias: Alias
    status: Literal["embedded", "updated", "unchanged"]


class ToolRegistration(_Body):
    entity_id: str
    registered: int
    embedded: int = Field(description="definitions embedded (new, or their embedded text changed)")
    updated_without_embedding: int
    unchanged: int
    model_id: str
    unresolved_requires: list[str]
    tools: list[ToolStatus]


class ToolInfo(_Body):
    name: str
    alias: Alias
    description: str
    parameters: dict[str, Any]
    category: str | None
    tags: list[str]
    requires: list[str]
    examples: list[str]
    tokens: int
    model_id: str


class ToolList(_Body):
    entity_id: str
    count: int
    tokens: int
    tools: list[ToolInfo]


class Deleted(_Body):
    entity_id: str
    deleted: list[str]


class SelectedTool(_Body):
    name: str
    alias: Alias
    entity_id: str
    definition: dict[str, Any] = Field(description="name (the alias), description, parameters: ready for an LLM")
    score: float
    p: float = Field(description="the probability that the request needs this tool (calibrated on its fused z)")
    scores: dict[str, float]
    reason: str = Field(description="named, matched, category, required or fallback")
    tokens: int


class TokenAccount(_Body):
    selected: int
    registry: int
    reduction: float
    tokenizer: str


class SearchTool(_Body):
    definition: dict[str, Any] = Field(description="find_tools: name, description, parameters, ready for an LLM")
    tokens: int
    call: dict[str, Any] = Field(description="what a call of it stands for: POST /tools/select with the LLM's "
                                 "arguments (query, k) merged into body (the entities, the tools sent excluded)")
    mcp_tool: str = Field(description="the MCP tool that answers the same call")


class ToolSelection(_Body):
    query: str
    entity_ids: list[str]
    registry_size: int
    tools: list[SelectedTool]
    count: int
    confident: bool
    fallback: str | None = Field(description="null, or why the selection was not made by score: empty_registry, "
                                 "small_registry (every tool), not_confident_shortlist (the k best, not to be "
                                 "trusted, with search_tool), not_confident (every tool of a registry of at most "
                                 "64, when whole_registry_when_unsure), nothing_left (every tool excluded)")
    tokens: TokenAccount = Field(description="selected counts the search tool's definition when one is offered")
    search_tool: SearchTool | None = None
    took_ms: float


class FeedbackResult(_Body):
    recorded: dict[str, list[str]]


class IndexRegistration(_Body):
    entity_id: str
    registered: int
    embedded: int
    unchanged: int
    model_id: str


class IndexInfo(_Body):
    name: str
    kind: Literal["collection", "external"]
    description: str
    fields: list[str]
    profile: dict[str, Any]
    model_id: str


class IndexList(_Body):
    entity_id: str
    count: int
    indices: list[IndexInfo]


class SelectedIndex(_Body):
    name: str
    entity_id: str
    kind: Literal["collection", "external"]
    description: str
    score: float
    scores: dict[str, float]
    evidence: dict[str, Any] = Field(description="name, field and description words that matched; best part; "
                                                 "the fields closest to the request by their own vectors")


class IndexSelection(_Body):
    query: str
    indices: list[SelectedIndex]
    count: int
    confident: bool
    registry_size: int
    took_ms: float


class CollectionProfile(_Body):
    documents: int = Field(description="ready documents")
    fields: list[str] = Field(description="field paths of its JSON documents")
    tags: list[str]
    sources: list[str]
    terms: list[str] = Field(description="distinctive terms: frequent in its chunks, rare in the entity's")
    summary: str = Field(description="the most representative sentences of its documents' summaries")


class Collection(_Body):
    name: str
    description: str
    documents: int
    ready_documents: int
    pending: bool = Field(description="a change of its documents is waiting to be folded into the profile")
    profile: CollectionProfile | None = Field(description="null until its first document is ready")
    created_at: datetime
    updated_at: datetime


class CollectionDetail(Collection):
    entity_id: str


class CollectionList(_Body):
    entity_id: str
    count: int
    collections: list[Collection]


class SearchedCollections(_Body):
    """What ``collections`` in a search request made of the scope."""

    mode: Literal["list", "auto"]
    searched: list[str] | None = Field(description="the collections searched; null: every document")
    confident: bool | None = Field(description="auto: whether index selection's first choice was confident")
    shortlist: list[str] | None = Field(description="auto: the best collections, best first")
