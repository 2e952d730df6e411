"""The synchronous client. ``AsyncClient`` (async_client.py) has the same methods, awaited."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from tenacity import Retrying

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
from .files import FileToUpload, collect_files, guess_content_type
from .trajectory import Trajectory


class Client:
    """edgeindex over HTTP, blocking.

    >>> with Client("ei_...") as client:
    ...     client.upload_text("alice", "notes-1", "rotate the oncall schedule every monday")
    ...     client.wait_ready("alice", "notes-1")
    ...     hits = client.search("who is oncall", entity_ids=["alice"]).results
    """

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, upload_url: str | None = None,
                 search_url: str | None = None, timeout: float | httpx.Timeout = 30.0, max_retries: int = 4,
                 backoff: float = 0.25, max_backoff: float = 8.0, http_client: httpx.Client | None = None) -> None:
        self._settings = _Settings(api_key, base_url=base_url, upload_url=upload_url, search_url=search_url,
                                   timeout=timeout, max_retries=max_retries, backoff=backoff, max_backoff=max_backoff)
        self._own_http = http_client is None
        self._http = http_client or httpx.Client(timeout=self._settings.timeout)

    # --- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, call: Call) -> ops.Reply:
        args = self._settings.request_args(call)
        for attempt in Retrying(**self._settings.retrying()):
            with attempt:
                return to_reply(self._http.request(**args))
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, call: Call) -> ops.Reply:
        try:
            return self._send(call)
        except httpx.TransportError as exc:
            raise transport_error(exc, self._settings.request_args(call)["url"]) from exc

    def _run(self, op: ops.Op) -> Any:
        step = next(op)
        while True:
            try:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    value: Any = None
                elif isinstance(step, Parallel):
                    with ThreadPoolExecutor(max_workers=min(8, len(step.calls)) or 1) as pool:
                        value = list(pool.map(self._call, step.calls))
                else:
                    value = self._call(step)
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

    def create_entity(self, id: str, kind: m.EntityKind = "user", name: str | None = None) -> m.Entity:
        """A tenant: a user, group, network or community. Needs an admin key."""
        return self._run(ops.create_entity(id, kind, name))

    def list_entities(self) -> list[m.Entity]:
        return self._run(ops.list_entities())

    def create_key(self, name: str, entity_ids: list[str] | None = None, *, admin: bool = False) -> m.CreatedKey:
        """A new API key granted ``entity_ids``; its secret (``.key``) is shown only here."""
        return self._run(ops.create_key(name, entity_ids, admin))

    def list_keys(self) -> list[m.APIKey]:
        return self._run(ops.list_keys())

    def revoke_key(self, key_id: str) -> m.RevokedKey:
        return self._run(ops.revoke_key(key_id))

    # --- uploads --------------------------------------------------------------------------------

    def upload_text(self, entity_id: str, document_id: str, text: str, *, content_type: str = "text/plain",
                    title: str | None = None, source: str | None = None, tags: list[str] | None = None,
                    skip_unchanged: bool = True, collection: str | None = None) -> m.Document:
        """A small text document, uploaded directly; returns it pending (see ``wait_ready``)."""
        return self._run(ops.upload_bytes(entity_id, document_id, text.encode(), content_type=content_type,
                                          title=title, source=source, tags=tags, skip_unchanged=skip_unchanged,
                                          mode="direct", collection=collection))

    def upload_bytes(self, entity_id: str, document_id: str | None, data: bytes, *, content_type: str,
                     title: str | None = None, source: str | None = None, tags: list[str] | None = None,
                     filename: str | None = None, metadata: dict[str, Any] | None = None,
                     skip_unchanged: bool = True, mode: UploadMode = "auto",
                     collection: str | None = None) -> m.Document:
        """Any body: direct when small, else presigned (multipart above the server's threshold)."""
        return self._run(ops.upload_bytes(entity_id, document_id, data, content_type=content_type, title=title,
                                          source=source, tags=tags, filename=filename, metadata=metadata,
                                          skip_unchanged=skip_unchanged, mode=mode,
                                          collection=collection))

    def upload_file(self, entity_id: str, path: str | Path, *, document_id: str | None = None,
                    content_type: str | None = None, title: str | None = None, source: str | None = None,
                    tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                    skip_unchanged: bool = True, mode: UploadMode = "auto",
                    collection: str | None = None) -> m.Document:
        """A file; its document id defaults to its name, its content type to its suffix's."""
        path = Path(path)
        file = collect_files([path])[0]
        return self._run(ops.upload_bytes(entity_id, document_id or file.document_id, path.read_bytes(),
                                          content_type=content_type or guess_content_type(path), title=title,
                                          source=source, tags=tags, filename=path.name, metadata=metadata,
                                          skip_unchanged=skip_unchanged, mode=mode,
                                          collection=collection))

    def upload_files(self, entity_id: str, paths: Iterable[str | Path] | Iterable[FileToUpload], *,
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
        bulk_outcomes: list[UploadOutcome] = []
        for batch in ops.bulk_batches([f.path.stat().st_size for f in small]):
            bulk_outcomes += self._upload_bulk(entity_id, [small[i] for i in batch], skip_unchanged=skip_unchanged,
                                               source=source, tags=tags, collection=collection,
                                               on_result=on_result)

        def one(file: FileToUpload) -> UploadOutcome:
            outcome = UploadOutcome(file.path, file.document_id)
            try:
                outcome.document = self._run(ops.upload_bytes(
                    entity_id, file.document_id, file.path.read_bytes(), content_type=guess_content_type(file.path),
                    source=source, tags=tags, filename=file.path.name, skip_unchanged=skip_unchanged, mode=mode,
                    collection=collection))
            except Exception as exc:  # reported per file; the batch goes on
                outcome.error = exc
            if on_result is not None:
                on_result(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            return bulk_outcomes + list(pool.map(one, files))

    def upload_many(self, entity_id: str, documents: list[m.BulkDocument]) -> m.BulkResult:
        """Many small documents in one request; one result per document (see ``BulkResult``)."""
        return self._run(ops.upload_many(entity_id, documents))

    def _upload_bulk(self, entity_id: str, files: list[FileToUpload], *, skip_unchanged: bool, source, tags,
                     collection: str | None, on_result) -> list[UploadOutcome]:
        try:
            datas = [f.path.read_bytes() for f in files]
        except OSError as exc:  # a file that cannot be read: the request is not sent, every file says why
            outcomes = [UploadOutcome(f.path, f.document_id, error=exc) for f in files]
        else:
            outcomes = self._run(ops.upload_bulk_files(entity_id, files, datas, skip_unchanged=skip_unchanged,
                                                       source=source, tags=tags, collection=collection))
        for outcome in outcomes:
            if on_result is not None:
                on_result(outcome)
        return outcomes

    # --- documents -------------------------------------------------------------------------------

    def get_document(self, entity_id: str, document_id: str) -> m.Document:
        return self._run(ops.get_document(entity_id, document_id))

    def list_documents(self, entity_id: str, *, status: str | None = None, after: str | None = None,
                       limit: int | None = None) -> m.DocumentPage:
        """One page, ordered by document id; pass ``next_after`` back as ``after`` for the next."""
        return self._run(ops.list_documents(entity_id, status=status, after=after, limit=limit))

    def iter_documents(self, entity_id: str, *, status: str | None = None, page_size: int = 500) -> Iterator[m.Document]:
        after = None
        while True:
            page = self.list_documents(entity_id, status=status, after=after, limit=page_size)
            yield from page.documents
            if not page.next_after:
                return
            after = page.next_after

    def delete_document(self, entity_id: str, document_id: str) -> m.DeletedDocument:
        return self._run(ops.delete_document(entity_id, document_id))

    def document_versions(self, entity_id: str, document_id: str) -> m.DocumentVersions:
        """The document's retained versions: when each was live, and the entity's retention."""
        return self._run(ops.document_versions(entity_id, document_id))

    def changes(self, entity_id: str, document_id: str, *, since: int | str | datetime,
                until: int | str | datetime | None = None) -> m.DocumentChanges:
        """Chunks added, removed and changed since a version (number) or a time (e.g. when an agent
        last read the document), up to ``until`` (default: the live version)."""
        return self._run(ops.document_changes(entity_id, document_id, since, until))

    def history_retention(self, entity_id: str) -> m.Retention:
        return self._run(ops.history_retention(entity_id))

    def set_history_retention(self, entity_id: str, *, versions: int | None = None,
                              days: int | None = None) -> m.Retention:
        """An entity's own retention (None: the deployment's); an admin key's call."""
        return self._run(ops.set_history_retention(entity_id, versions=versions, days=days))

    def wait_ready(self, entity_id: str, document_id: str, *, version: int | None = None,
                   timeout: float = 120.0, interval: float = 0.25) -> m.Document:
        """Poll until ready; ``DocumentFailedError`` if ingestion failed, ``WaitTimeoutError`` after ``timeout``."""
        return self._run(ops.wait_ready(entity_id, document_id, version=version, timeout=timeout, interval=interval))

    # --- search and selection --------------------------------------------------------------------

    def search(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
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
        return self._run(ops.search(search_request(query, options)))

    def trajectory(self, trajectory_id: str | None = None, *, create: bool = False) -> Trajectory:
        """A ``Trajectory``: searches through it leave out what it returned before, and it keeps the last
        step's novelty (``create``: claim the id on the server now, refused when taken)."""
        return Trajectory(self, trajectory_id, create=create)

    def search_request(self, request: m.SearchRequest) -> m.SearchResponse:
        return self._run(ops.search(request))

    def select_tools(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
                     threshold: float | None = None, **options: Any) -> m.ToolSelection:
        """``POST /tools/select``: the tools an agent needs for ``query`` (extension point: options pass through)."""
        body = select_body(m.ToolSelectRequest, query, dict(entity_ids=entity_ids, k=k, threshold=threshold, **options))
        return self._run(ops.select("/tools/select", body, m.ToolSelection))

    def select_index(self, query: str, *, entity_ids: list[str] | None = None, k: int | None = None,
                     **options: Any) -> m.IndexSelection:
        """``POST /indices/select``: a ranked shortlist of the collections to search."""
        body = select_body(m.IndexSelectRequest, query, dict(entity_ids=entity_ids, k=k, **options))
        return self._run(ops.select("/indices/select", body, m.IndexSelection))

    def register_tools(self, entity_id: str, tools: list[dict[str, Any]]) -> m.ToolRegistration:
        """``POST /entities/{entity}/tools``: plain, OpenAI or MCP definitions (batched); unchanged ones are not
        embedded again."""
        return self._run(ops.register_tools(entity_id, tools))

    def register_indices(self, entity_id: str, indices: list[m.IndexDescriptor | dict[str, Any]]
                         ) -> m.IndexRegistration:
        """``POST /entities/{entity}/indices``: describe external indices (name, description, fields,
        tables) for index selection; unchanged ones are not embedded again."""
        return self._run(ops.register_indices(entity_id, indices))

    def import_tools(self, entity_id: str, document: Any) -> m.ToolRegistration:
        """Register the tools of an MCP ``tools/list`` result or an OpenAI ``tools`` array (parsed JSON)."""
        return self._run(ops.register_tools(entity_id, tools_from(document)))

    def list_collections(self, entity_id: str) -> m.CollectionList:
        """The entity's collections with their profiles."""
        return self._run(ops.list_collections(entity_id))

    def describe_collection(self, entity_id: str, name: str, description: str) -> m.Collection:
        """Set a collection's description (index selection reads it)."""
        return self._run(ops.describe_collection(entity_id, name, description))

    # --- service -------------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, service: ops.Service | None = "upload", json: Any = None,
                content: bytes | None = None, params: dict[str, str] | None = None,
                headers: dict[str, str] | None = None) -> RawResponse:
        """Any route, answered as sent: no error raised for a 4xx or 5xx and no retry.

        For routes this client has no method for yet, and for probes and tests that must see the
        raw status. ``path`` is relative to the ``service``'s URL (``service=None``: an absolute URL)."""
        args = self._settings.request_args(raw_call(method, path, service, json, content, params, headers))
        try:
            return raw_response(self._http.request(**args))
        except httpx.TransportError as exc:
            raise transport_error(exc, args["url"]) from exc

    def health(self, service: ops.Service = "upload") -> dict:
        return self._run(ops.get_json(service, "/health"))

    def openapi(self, service: ops.Service = "upload") -> dict:
        return self._run(ops.get_json(service, "/openapi.json"))


def _split_small(files: list[FileToUpload], *, mode: UploadMode,
                 bulk: bool) -> tuple[list[FileToUpload], list[FileToUpload]]:
    """(files small enough for bulk requests, the others)."""
    if not bulk or mode != "auto":
        return [], files
    small: list[FileToUpload] = []
    large: list[FileToUpload] = []
    for f in files:
        try:
            size = f.path.stat().st_size
        except OSError:
            size = ops.BULK_FILE_MAX_BYTES + 1  # its own upload reports the error
        (small if 0 < size <= ops.BULK_FILE_MAX_BYTES else large).append(f)
    return small, large


def _as_files(paths, *, pattern: str | None, prefix: str) -> list[FileToUpload]:
    items = list(paths)
    if items and all(isinstance(p, FileToUpload) for p in items):
        return items
    return collect_files(items, pattern=pattern, prefix=prefix)
