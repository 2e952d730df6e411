"""The system under test, reached only through its public HTTP routes, with the project's SDK.

Documents go in through the upload worker (``PUT /entities/{e}/documents/{id}``:
the object lands in the bucket, the bucket notifies the ingest queue, the ingest
worker runs the durable workflow), exactly as a user's would; queries go through
the search worker's ``POST /search`` with caching off so every timing is a real
search. Every request goes through ``edgeindex_client.AsyncClient`` (clients/python),
the client users get, so the latency measured here includes what theirs does.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from edgeindex_client import AsyncClient, EdgeIndexClientError, SearchRequest

from ..errors import BindingError, EdgeIndexError
from .beir import Document

log = logging.getLogger(__name__)


class RouteError(EdgeIndexError):
    """A route answered with an unexpected status or content."""

    code = "eval_route"


@dataclass
class IngestOutcome:
    ready: int = 0
    failed: dict[str, str] = field(default_factory=dict)   # document id -> error
    seconds: float = 0.0
    chunks: int = 0


class EdgeIndexClient:
    """The SDK's async client for one key, with what the evaluation adds: bulk ingestion and timed searches."""

    def __init__(self, upload_url: str, search_url: str, key: str, *, timeout: float = 120.0) -> None:
        # No retries: a 429 or 503 during an evaluation is a finding, not something to hide in a latency.
        self._client = AsyncClient(key, upload_url=upload_url, search_url=search_url, timeout=timeout,
                                   max_retries=0)

    async def __aenter__(self) -> EdgeIndexClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self._client.aclose()

    async def _sdk(self, what: str, call):
        """One SDK call; its errors become this package's (the run reports them, it does not crash on them)."""
        try:
            return await call
        except EdgeIndexClientError as exc:
            raise RouteError(f"{what}: {exc}") from exc

    # -- tenancy -------------------------------------------------------------------

    async def create_entity(self, entity_id: str, *, name: str = "") -> None:
        await self._sdk("create entity", self._client.create_entity(entity_id, "user", name or entity_id))

    async def create_key(self, entity_id: str) -> str:
        return (await self.create_key_with_id(entity_id))[1]

    async def create_key_with_id(self, entity_id: str) -> tuple[str, str]:
        """(key id, secret) of a new key granted ``entity_id``: the id is what revoking it takes."""
        created = await self._sdk("create key", self._client.create_key(f"eval {entity_id}", [entity_id]))
        return created.id, created.key

    async def revoke_key(self, key_id: str) -> None:
        await self._sdk("revoke key", self._client.revoke_key(key_id))

    # -- ingestion -----------------------------------------------------------------

    async def put_document(self, entity_id: str, document: Document, *, source: str) -> dict:
        uploaded = await self._sdk(f"upload {document.id!r}", self._client.upload_bytes(
            entity_id, document.id, document.content.encode("utf-8"), content_type="text/plain; charset=utf-8",
            title=document.title or None, source=source, mode="direct"))
        return uploaded.model_dump()

    async def document(self, entity_id: str, document_id: str) -> dict:
        found = await self._sdk(f"status of {document_id!r}", self._client.get_document(entity_id, document_id))
        return found.model_dump()

    async def ingest(self, entity_id: str, documents: list[Document], *, source: str, concurrency: int = 8,
                     window: int = 64, poll_seconds: float = 0.5, timeout: float = 3600.0, upload: bool = True,
                     progress: Callable[[str], None] | None = None) -> IngestOutcome:
        """Upload every document and poll the status route until each is ready or failed.

        ``upload=False`` only waits for (or checks) documents uploaded before.

        At most ``window`` documents are in flight (uploaded, not yet finished): a
        queue thousands deep gains nothing over a short one, and the embedded queue
        (moto) scans every queued message on each receive, so a deep queue slows
        ingestion down several times over.
        """
        started = time.perf_counter()
        limit = asyncio.Semaphore(concurrency)
        waiting = collections.deque(documents if upload else [])
        in_flight = [] if upload else [d.id for d in documents]   # upload order: the queue is roughly FIFO
        outcome = IngestOutcome()
        deadline = time.monotonic() + timeout
        last_report = time.monotonic()

        async def put(document: Document) -> None:
            async with limit:
                await self.put_document(entity_id, document, source=source)

        async def status(document_id: str) -> dict:
            async with limit:
                return await self.document(entity_id, document_id)

        while waiting or in_flight:
            batch = [waiting.popleft() for _ in range(min(len(waiting), window - len(in_flight)))]
            await asyncio.gather(*(put(d) for d in batch))
            in_flight.extend(d.id for d in batch)
            # check the oldest in-flight documents, a few at a time
            checked = in_flight[:4 * concurrency]
            finished = set()
            for doc_id, doc in zip(checked, await asyncio.gather(*(status(d) for d in checked))):
                if doc["status"] == "ready":
                    outcome.ready += 1
                    outcome.chunks += int(doc.get("chunk_count") or 0)
                    finished.add(doc_id)
                elif doc["status"] == "failed":
                    outcome.failed[doc_id] = str(doc.get("error") or "failed without a reason")
                    finished.add(doc_id)
            in_flight = [d for d in in_flight if d not in finished]
            now = time.monotonic()
            if progress and (now - last_report > 10 or not (waiting or in_flight)):
                done = outcome.ready + len(outcome.failed)
                rate = done / max(time.perf_counter() - started, 1e-9)
                progress(f"ingested {done}/{len(documents)} ({rate:.1f} docs/s, {len(outcome.failed)} failed)")
                last_report = now
            if in_flight and not finished:
                if now > deadline:
                    raise BindingError(f"{len(in_flight) + len(waiting)} documents still not ready after "
                                       f"{timeout:.0f}s (first: {in_flight[:3]})")
                await asyncio.sleep(poll_seconds)
        outcome.seconds = time.perf_counter() - started
        return outcome

    # -- search --------------------------------------------------------------------

    async def search_answer(self, body: dict) -> dict:
        """The whole ``POST /search`` answer as JSON (``routing`` included): the router's training reads it."""
        answer = await self._sdk("POST /search", self._client.search_request(SearchRequest.model_validate(body)))
        return answer.model_dump(mode="json")

    async def search(self, body: dict, server_timings: list[dict] | None = None,
                     enhancements: dict[str, dict] | None = None,
                     routing: dict[str, dict] | None = None) -> tuple[list[str], float]:
        """Ranked document ids (first occurrence of each) and the client-side wall time in ms.

        ``server_timings`` collects what the worker says it spent (``took_ms`` and its ``timings``),
        which tells worker time from HTTP and queueing time; ``routing`` what the router served
        each query text (the answer's ``routing``: strategy, alpha, features, as telemetry logs it).
        """
        request = SearchRequest.model_validate(body)
        started = time.perf_counter()
        answer = await self._sdk("POST /search", self._client.search_request(request))
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if answer.cache not in (None, "none"):
            raise RouteError(f"POST /search served a cached answer ({answer.cache}) although the "
                             "request said cache: false; the latency would not be a real search")
        ranked = list(dict.fromkeys(r.document_id for r in answer.results))
        if server_timings is not None:
            server_timings.append({"took_ms": answer.took_ms, **(answer.timings or {})})
        if enhancements is not None and answer.enhancement is not None:
            enhancements[body["query"]] = answer.enhancement  # what query enhancement did, per query text
        if routing is not None and answer.routing is not None:
            routing[body["query"]] = answer.routing
        return ranked, elapsed_ms
