"""The asyncio client: the methods of ``Client``, awaited (both run the operations in _ops.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from tenacity import AsyncRetrying

from . import _aio
from . import _ops as ops
from . import models as m
from ._base import (
    _Settings,
    raw_call,
    raw_response,
    search_request,
    select_body,
    to_reply,
    tools_from,
    transport_error,
)
from ._ops import Call, Parallel, RawResponse, Sleep, UploadMode
from ._shared_api import UploadOutcome
from .client import _as_files, _split_small
from .files import FileToUpload, collect_files, guess_content_type
from .trajectory import AsyncTrajectory


class AsyncClient:
    """edgeindex over HTTP, for asyncio.

    >>> async with AsyncClient("ei_...") as client:
    ...     await client.upload_text("alice", "notes-1", "rotate the oncall schedule every monday")
    ...     await client.wait_ready("alice", "notes-1")
    ...     hits = (await client.search("who is oncall", entity_ids=["alice"])).results
    """

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, upload_url: str | None = None,
                 search_url: str | None = None, timeout: float | httpx.Timeout = 30.0, max_retries: int = 4,
                 backoff: float = 0.25, max_backoff: float = 8.0,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self._settings = _Settings(api_key, base_url=base_url, upload_url=upload_url, search_url=search_url,
                                   timeout=timeout, max_retries=max_retries, backoff=backoff, max_backoff=max_backoff)
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=self._settings.timeout, limits=httpx.Limits(max_connections=64, max_keepalive_connections=32))
        # The services' routes go through aiohttp when it is installed (_aio.py: ~0.5 ms less per request);
        # presigned object-storage URLs, and everything when the caller brings its own http_client, through httpx.
        self._services = (_aio.AiohttpTransport(self._settings.timeout, max_connections=64)
                          if self._own_http and _aio.available() else None)

    # --- plumbing ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()
        if self._services is not None:
            await self._services.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def _transport(self, service: ops.Service | None) -> Any:
        return self._services if self._services is not None and service is not None else self._http

    async def _send(self, call: Call) -> ops.Reply:
        args = self._settings.request_args(call)
        transport = self._transport(call.service)
        async for attempt in AsyncRetrying(**self._settings.retrying()):
            with attempt:
                return to_reply(await transport.request(**args))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, call: Call) -> ops.Reply:
        try:
            return await self._send(call)
        except httpx.TransportError as exc:
            raise transport_error(exc, self._settings.request_args(call)["url"]) from exc

    async def _run(self, op: ops.Op) -> Any:
        step = next(op)
        while True:
            try:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    value: Any = None
                elif isinstance(step, Parallel):
                    value = list(await asyncio.gather(*(self._call(c) for c in step.calls)))
                else:
                    value = await self._call(step)
            except BaseException as exc:
                try:
                    step = op.throw(exc)
                except StopIteration as stop:
                    return stop.value
                continue
            try:
                step = op.send(value)
            except StopIteration as stop:
                return stop.value

    # --- tenancy (admin key) ------------------------------------------------------------------

    async def create_entity(self, id: str, kind: m.EntityKind = "user", name: str | None = None) -> m.Entity:
        """A tenant: a user, group, network or community. Needs an admin key."""
        return await self._run(ops.create_entity(id, kind, name))

    async def list_entities(self) -> list[m.Entity]:
        return await self._run(ops.list_entities())

    async def create_key(self, name: str, entity_ids: list[str] | None = None, *, admin: bool = False) -> m.CreatedKey:
        """A new API key granted ``entity_ids``; its secret (``.key``) is shown only here."""
        return await self._run(ops.create_key(name, entity_ids, admin))

    async def list_keys(self) -> list[m.APIKey]:
        return await self._run(ops.list_keys())

    async def revoke_key(self, key_id: str) -> m.RevokedKey:
        return await self._run(ops.revoke_key(key_id))

    # --- uploads --------------------------------------------------------------------------------

    async def upload_text(self, entity_id: str, document_id: str, text: str, *, content_type: str = "text/plain",
                          title: str | None = None, source: str | None = None, tags: list[str] | None = None,
                          skip_unchanged: bool = True, collection: str | None = None) -> m.Document:
        """A small text document, uploaded directly; returns it pending (see ``wait_ready``)."""
        return await self._run(ops.upload_bytes(entity_id, document_id, text.encode(), content_type=content_type,
                                                title=title, source=source, tags=tags,
                                                skip_unchanged=skip_unchanged, mode="direct",
                                                collection=collection))

    async def upload_bytes(self, entity_id: str, document_id: str | None, data: bytes, *, content_type: str,
                           title: str | None = None, source: str | None = None, tags: list[str] | None = None,
                           filename: str | None = None, metadata: dict[str, Any] | None = None,
                           skip_unchanged: bool = True, mode: UploadMode = "auto",
                           collection: str | None = None) -> m.Document:
        """Any body: direct when small, else presigned (multipart above the server's threshold)."""
        return await self._run(ops.upload_bytes(entity_id, document_id, data, content_type=content_type, title=title,
                                                source=source, tags=tags, filename=filename, metadata=metadata,
                                                skip_unchanged=skip_unchanged, mode=mode,
                                                collection=collection))

    async def upload_file(self, entity_id: str, path: str | Path, *, document_id: str | None = None,
                          content_type: str | None = None, title: str | None = None, source: str | None = None,
                          tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                          skip_unchanged: bool = True, mode: UploadMode = "auto",
                          collection: str | None = None) -> m.Document:
        """A file; its document id defaults to its name, its content type to its suffix's."""
        path = Path(path)
        file = collect_files([path])[0]
        data = await asyncio.to_thread(path.read_bytes)
        return await self._run(ops.upload_bytes(entity_id, document_id or file.document_id, data,
                                                content_type=content_type or guess_content_type(path), title=title,
                                                source=source, tags=tags, filename=path.name, metadata=metadata,
                                                skip_unchanged=skip_unchanged, mode=mode,
                                                collection=collection))

    async def upload_files(self, entity_id: str, paths: Iterable[str | Path] | Iterable[FileToUpload], *,
                           pattern: str | None = None, prefix: str = "", concurrency: int = 8,
                           skip_unchanged: bool = True, source: str | None = None, tags: list[str] | None = None,
                           mode: UploadMode = "auto", bulk: bool = True,
                           collection: str | None = None,
                           on_result: Callable[[UploadOutcome], None] | None = None) -> list[UploadOutcome]:
        """Files, folders (walked; ``pattern`` filters names) and globs, ``concurrency`` at a time.

        With ``bulk`` (and mode ``auto``) small files (up to 256 KiB) go many to a request
        (``upload_many``); larger ones one by one. A file that fails does not stop the
        others: its outcome carries the error. Outcomes: bulk-sent files first."""
        files = _as_files(paths, pattern=pattern, prefix=prefix)
        small, files = _split_small(files, mode=mode, bulk=bulk)
        gate = asyncio.Semaphore(max(1, concurrency))
        bulk_runs = [self._upload_bulk(entity_id, [small[i] for i in batch], gate, skip_unchanged=skip_unchanged,
                                       source=source, tags=tags, collection=collection, on_result=on_result)
                     for batch in ops.bulk_batches([f.path.stat().st_size for f in small])]

        async def one(file: FileToUpload) -> UploadOutcome:
            outcome = UploadOutcome(file.path, file.document_id)
            async with gate:
                try:
                    data = await asyncio.to_thread(file.path.read_bytes)
                    outcome.document = await self._run(ops.upload_bytes(
                        entity_id, file.document_id, data, content_type=guess_content_type(file.path),
                        source=source, tags=tags, filename=file.path.name, skip_unchanged=skip_unchanged, mode=mode,
                        collection=collection))
                except Exception as exc:  # reported per file; the batch goes on
                    outcome.error = exc
            if on_result is not None:
                on_result(outcome)
            return outcome

        bulk_outcomes = [o for outcomes in await asyncio.gather(*bulk_runs) for o in outcomes]
        return bulk_outcomes + list(await asyncio.gather(*(one(f) for f in files)))

    async def upload_many(self, entity_id: str, documents: list[m.BulkDocument]) -> m.BulkResult:
        """Many small documents in one request; one result per document (see ``BulkResult``)."""
        return await self._run(ops.upload_many(entity_id, documents))

    async def _upload_bulk(self, entity_id: str, files: list[FileToUpload], gate: asyncio.Semaphore, *,
                           skip_unchanged: bool, source, tags, collection: str | None,
                           on_result) -> list[UploadOutcome]:
        async with gate:
            try:
                datas = await asyncio.to_thread(lambda: [f.path.read_bytes() for f in files])
            except OSError as exc:  # a file that cannot be read: the request is not sent, every file says why
                outcomes = [UploadOutcome(f.path, f.document_id, error=exc) for f in files]
            else:
                outcomes = await self._run(ops.upload_bulk_files(
                    entity_id, files, datas, skip_unchanged=skip_unchanged, source=source, tags=tags,
                    collection=collection))
        for outcome in outcomes:
            if on_result is not None:
                on_result(outcome)
        return outcomes

    # --- documents -------------------------------------------------------------------------------

    async def get_document(self, entity_id: str, document_id: str) -> m.Document:
        return await self._run(ops.get_document(entity_id, document_id))

    async def list_documents(self, entity_id: str, *, status: str | None = None, after: str | None = None,
                             limit: int | None = None) -> m.DocumentPage:
        """One page, ordered by document id; pass ``next_after`` back as ``after`` for the next."""
        return await self._run(ops.list_documents(entity_id, status=status, after=after, limit=limit))

    async def iter_documents(self, entity_id: str, *, status: str | None = None,
                             page_size: int = 500) -> AsyncIterator[m.Document]:
        after = None
        while True:
            page = await self.list_documents(entity_id, status=status, after=after, limit=page_size)
            for doc in page.documents:
                yield doc
            if not page.next_after:
                return
            after = page.next_after

    async def delete_document(self, entity_id: str, document_id: str) -> m.DeletedDocument:
        return await self._run(ops.delete_document(entity_id, document_id))

    async def document_versions(self, entity_id: str, document_id: str) -> m.DocumentVersions:
        """The document's retained versions: when each was live, and the entity's retention."""
        return await self._run(ops.document_versions(entity_id, document_id))

    async def changes(self, entity_id: str, document_id: str, *, since: int | str | datetime,
                      until: int | str | datetime | None = None) -> m.DocumentChanges:
        """Chunks added, removed and changed since a version (number) or a time (e.g. when an agent
        last read the document), up to ``until`` (default: the live version)."""
        return await self._run(ops.document_changes(entity_id, document_id, since, until))

    async def history_retention(self, entity_id: str) -> m.Retention:
        return await self._run(ops.history_retention(entity_id))

    async def set_history_retention(self, entity_id: str, *, versions: int | None = None,
                                    days: int | None = None) -> m.Retention:
        """An entity's own retention (None: the deployment's); an admin key's call."""
        return await self._run(ops.set_history_retention(entity_id, versions=versions, days=days))

    async def wait_ready(self, entity_id: str, document_id: str, *, version: int | None = None,
                         timeout: float = 120.0, interval: float = 0.25) -> m.Document:
        """Poll until ready; ``DocumentFailedError`` if ingestion failed, ``WaitTimeoutError`` after ``timeout``."""
        return await self._run(ops.wait_ready(entity_id, document_id, version=version, timeout=timeout,
                                              interval=interval))

    # --- search and selection --------------------------------------------------------------------

    async def search(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
                     filters: m.SearchFilters | dict | None = None, alpha: float | None = None,
                     strategy: str | None = None,
                     fusion: str | None = None, vector_threshold: float | None = None,
                     text_threshold: float | None = None, trigram_threshold: float | None = None,
                     text_mode: str | None = None, dedupe: bool | None = None, rerank: bool | None = None,
                     include: m.SearchInclude | dict | None = None, cache: bool | None = None,
                     collections: list[str] | str | None = None,
                     order: str | None = None, enhance: str | list[str] | None = None,
                     trajectory: str | None = None, seen: str | None = None,
                     as_of: datetime | str | None = None) -> m.SearchResponse:
        """Hybrid search; options left out take the server's defaults (see POST /search).

        ``order``: ``"best_first"`` or ``"reverse"`` (best last, next to the question in a prompt);
        ``enhance``: ``"auto"``, ``"none"`` or a list of ``"prf"``, ``"synonyms"``, ``"hyde"``;
        ``trajectory``: a step of that trajectory (``seen``: ``"exclude"``, ``"include"`` or ``"mark"``
        what it returned before); ``client.trajectory()`` keeps the id for you; ``as_of``: the documents
        as they were at that time (document history; never cached)."""
        options = dict(order=order, enhance=enhance, trajectory=trajectory, seen=seen, as_of=as_of,
                       entity_ids=entity_ids, k=k, filters=filters, strategy=strategy, alpha=alpha, fusion=fusion,
                       vector_threshold=vector_threshold, text_threshold=text_threshold,
                       trigram_threshold=trigram_threshold, text_mode=text_mode, dedupe=dedupe, rerank=rerank,
                       include=include, cache=cache, collections=collections)
        return await self._run(ops.search(search_request(query, options)))

    def trajectory(self, trajectory_id: str | None = None) -> AsyncTrajectory:
        """An ``AsyncTrajectory``: searches through it leave out what it returned before (``await t.create()``
        to claim the id now; otherwise the first search creates it)."""
        return AsyncTrajectory(self, trajectory_id)

    async def search_request(self, request: m.SearchRequest) -> m.SearchResponse:
        return await self._run(ops.search(request))

    async def select_tools(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
                           threshold: float | None = None, **options: Any) -> m.ToolSelection:
        """``POST /tools/select``: the tools an agent needs for ``query`` (extension point: options pass through)."""
        body = select_body(m.ToolSelectRequest, query, dict(entity_ids=entity_ids, k=k, threshold=threshold, **options))
        return await self._run(ops.select("/tools/select", body, m.ToolSelection))

    async def select_index(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
                           **options: Any) -> m.IndexSelection:
        """``POST /indices/select``: a ranked shortlist of the collections to search."""
        body = select_body(m.IndexSelectRequest, query, dict(entity_ids=entity_ids, k=k, **options))
        return await self._run(ops.select("/indices/select", body, m.IndexSelection))

    async def register_tools(self, entity_id: str, tools: list[dict[str, Any]]) -> m.ToolRegistration:
        """``POST /entities/{entity}/tools``: plain, OpenAI or MCP definitions (batched); unchanged ones are not
        embedded again."""
        return await self._run(ops.register_tools(entity_id, tools))

    async def register_indices(self, entity_id: str, indices: list[m.IndexDescriptor | dict[str, Any]]
                         ) -> m.IndexRegistration:
        """``POST /entities/{entity}/indices``: describe external indices (name, description, fields,
        tables) for index selection; unchanged ones are not embedded again."""
        return await self._run(ops.register_indices(entity_id, indices))

    async def import_tools(self, entity_id: str, document: Any) -> m.ToolRegistration:
        """Register the tools of an MCP ``tools/list`` result or an OpenAI ``tools`` array (parsed JSON)."""
        return await self._run(ops.register_tools(entity_id, tools_from(document)))

    async def list_collections(self, entity_id: str) -> m.CollectionList:
        """The entity's collections with their profiles."""
        return await self._run(ops.list_collections(entity_id))

    async def describe_collection(self, entity_id: str, name: str, description: str) -> m.Collection:
        """Set a collection's description (index selection reads it)."""
        return await self._run(ops.describe_collection(entity_id, name, description))

    # --- service -------------------------------------------------------------------------------------

    async def request(self, method: str, path: str, *, service: ops.Service | None = "upload", json: Any = None,
                      content: bytes | None = None, params: dict[str, str] | None = None,
                      headers: dict[str, str] | None = None) -> RawResponse:
        """Any route, answered as sent: no error raised for a 4xx or 5xx and no retry.

        For routes this client has no method for yet, and for probes and tests that must see the
        raw status. ``path`` is relative to the ``service``'s URL (``service=None``: an absolute URL)."""
        args = self._settings.request_args(raw_call(method, path, service, json, content, params, headers))
        try:
            return raw_response(await self._transport(service).request(**args))
        except httpx.TransportError as exc:
            raise transport_error(exc, args["url"]) from exc

    async def health(self, service: ops.Service = "upload") -> dict:
        return await self._run(ops.get_json(service, "/health"))

    async def openapi(self, service: ops.Service = "upload") -> dict:
        return await self._run(ops.get_json(service, "/openapi.json"))
