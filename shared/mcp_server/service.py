"""What each MCP tool does, for an authenticated principal, over the same services the HTTP workers
use (``SearchService``, ``TrajectoryService``, ``UploadService``) and the same grant check
(``Principal.check``): a key sees over MCP exactly what it sees over HTTP, and a trajectory is the
same one over both (it lives in the KV)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import sqlfiles
from ..bindings.database import Database
from ..errors import NotFound, ValidationError
from ..history.service import HistoryService
from ..json_codec import check_json_value
from ..search.service import SearchService
from ..selection import collections
from ..selection.http import SelectionService
from ..tenancy import Principal
from ..trajectories import service as trajectories
from ..uploads.service import UploadService
from ..validation import parse
from .answers import compact_expansion, compact_grounding, compact_search, compact_selection
from .tools import (
    TOOLS,
    ChangesArgs,
    DocumentRef,
    EntityArgs,
    ExpandArgs,
    FindToolsArgs,
    GetChunkArgs,
    GetDocumentArgs,
    ListDocumentsArgs,
    TrajectoryArgs,
    UploadTextArgs,
)

SQL = sqlfiles.load("mcp.sql")


def _diagnostics(arguments: dict[str, Any]) -> bool:
    """``diagnostics``, taken out of the arguments the HTTP request model reads."""
    value = arguments.pop("diagnostics", False)
    if not isinstance(value, bool):
        raise ValidationError("diagnostics must be true or false", field="diagnostics")
    return value


@dataclass(frozen=True)
class McpTools:
    db: Database
    search: SearchService
    uploads: UploadService
    selection: SelectionService
    trajectories: trajectories.TrajectoryService
    history: HistoryService

    async def call(self, principal: Principal, name: str, arguments: dict[str, Any], *, background) -> dict:
        """``background`` is the worker's ctx: search stores its cache entries after answering."""
        if name not in TOOLS:
            raise NotFound(f"no tool {name!r}; tools: {', '.join(TOOLS)}", field="name")
        check_json_value(arguments)   # what every HTTP body passes first (NUL, lone surrogates, depth)
        if name == "search":  # the search service parses and checks the grant, as POST /search does
            diagnostics = _diagnostics(arguments)
            trajectories.check_body(arguments)
            if "trajectory" in arguments:  # a step, as POST /search with a trajectory in its body
                answer = await self.trajectories.step(principal, arguments, background=background)
            else:
                answer = await self.search.search(principal, arguments, background=background)
            return compact_search(answer, diagnostics=diagnostics)
        if name == "expand":  # the route's body checks first, then its path's trajectory, as over HTTP
            args = parse(ExpandArgs, arguments)
            body = {k: v for k, v in arguments.items() if k != "trajectory"}
            return compact_expansion(await self.trajectories.expand(principal, args.trajectory, body))
        if name == "trajectory":
            ref = parse(TrajectoryArgs, arguments)
            return compact_grounding(await self.trajectories.grounding(principal, ref.trajectory))
        if name == "select_tools":  # parsed and grant-checked by the selection service, as over HTTP
            diagnostics = _diagnostics(arguments)
            return compact_selection(await self.selection.select_tools(principal, arguments),
                                     diagnostics=diagnostics)
        if name == "find_tools":  # select_tools' search tool: the same route, never offering itself again
            args = parse(FindToolsArgs, arguments)
            body = {**args.model_dump(exclude_none=True), "search_tool": False}
            return compact_selection(await self.selection.select_tools(principal, body), diagnostics=False)
        if name == "select_index":
            return await self.selection.select_indices(principal, arguments)
        if name == "feedback":  # only searches the key could have run (checked by the router, as over HTTP)
            if self.search.router is None:
                raise ValidationError("feedback needs the retrieval router, which this deployment has not",
                                      field="search_id")
            return await self.search.router.feedback(principal, arguments)
        model, _ = TOOLS[name]
        args = parse(model, arguments)
        principal.check([args.entity_id], field="entity_id")
        return await getattr(self, f"_{name}")(args)

    async def _list_collections(self, args: EntityArgs) -> dict:
        return await collections.list_collections(self.db, args.entity_id)

    async def _changes(self, args: ChangesArgs) -> dict:
        return await self.history.changes(args.entity_id, args.document_id,
                                          args.model_dump(include={"since", "until"}, exclude_none=True))

    async def _document_status(self, args: DocumentRef) -> dict:
        return await self.uploads.get_document(args.entity_id, args.document_id)

    async def _list_documents(self, args: ListDocumentsArgs) -> dict:
        query = {k: str(v) for k, v in args.model_dump(exclude={"entity_id"}, exclude_none=True).items()}
        return await self.uploads.list_documents(args.entity_id, query)

    async def _get_document(self, args: GetDocumentArgs) -> dict:
        document = await self.uploads.get_document(args.entity_id, args.document_id)
        chunks = await self.db.fetch(SQL["document_chunks"], {
            "entity_id": args.entity_id, "document_id": args.document_id, "offset": args.offset,
            "limit": args.limit + 1})  # one more tells whether a next page exists
        keep = ("document_id", "entity_id", "status", "version", "ready_version", "title", "source", "tags",
                "content_type", "chunk_count", "summary", "error", "updated_at")
        more = len(chunks) > args.limit
        chunks = chunks[:args.limit]
        return {**{k: document.get(k) for k in keep}, "chunks": chunks,
                "next_offset": chunks[-1]["position"] + 1 if more else None}

    async def _get_chunk(self, args: GetChunkArgs) -> dict:
        rows = await self.db.fetch(SQL["chunk_with_neighbours"], {
            "entity_id": args.entity_id, "chunk_id": args.chunk_id, "neighbours": args.neighbours})
        hit = next((r for r in rows if r["hit"]), None)
        if hit is None:
            raise NotFound(f"no chunk {str(args.chunk_id)!r} in entity {args.entity_id!r}", field="chunk_id")
        strip = lambda r: {k: v for k, v in r.items() if k not in ("hit", "document_id")}  # noqa: E731
        return {"entity_id": args.entity_id, "document_id": hit["document_id"], **strip(hit),
                "before": [strip(r) for r in rows if r["position"] < hit["position"]],
                "after": [strip(r) for r in rows if r["position"] > hit["position"]]}

    async def _upload_text(self, args: UploadTextArgs) -> dict:
        data = args.text.encode("utf-8")
        query = {"skip_unchanged": "true" if args.skip_unchanged else "false"}
        for field in ("title", "source", "filename"):
            if (value := getattr(args, field)) is not None:
                query[field] = value
        if args.tags:
            query["tags"] = ",".join(args.tags)  # a tag cannot contain a comma (the Tag pattern)
        try:
            document, created = await self.uploads.direct_upload(
                args.entity_id, args.document_id, data, raw_content_type=f"{args.content_type}; charset=utf-8",
                query=query)
        except ValidationError as exc:  # the route's names for what are this tool's fields
            exc.field = {"body": "text", "Content-Type": "content_type"}.get(exc.field or "", exc.field)
            raise
        return document if created else {**document, "unchanged": True}
