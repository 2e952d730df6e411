"""The system under test, reached only through its public HTTP routes.

Documents go in through the upload worker (``PUT /entities/{e}/documents/{id}``:
the object lands in the bucket, the bucket notifies the ingest queue, the ingest
worker runs the durable workflow), exactly as a user's would; queries go through
the search worker's ``POST /search`` with caching off so every timing is a real
search.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import aiohttp

from ..errors import BindingError, EdgeIndexError
from .beir import Document

log = logging.getLogger(__name__)


class RouteError(EdgeIndexError):
    """A route answered with an unexpected status."""

    code = "eval_route"


@dataclass
class IngestOutcome:
    ready: int = 0
    failed: dict[str, str] = field(default_factory=dict)   # document id -> error
    seconds: float = 0.0
    chunks: int = 0


class EdgeIndexClient:
    """JSON over HTTP to a running stack (one keep-alive session per worker)."""

    def __init__(self, upload_url: str, search_url: str, key: str, *, timeout: float = 120.0) -> None:
        self.upload_url = upload_url.rstrip("/")
        self.search_url = search_url.rstrip("/")
        self.key = key
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> EdgeIndexClient:
        # one connection per concurrent request; keep-alive so a timed search pays no TCP handshake
        self._session = aiohttp.ClientSession(timeout=self._timeout,
                                              connector=aiohttp.TCPConnector(limit=32, keepalive_timeout=60),
                                              headers={"Authorization": f"Bearer {self.key}"})
        return self

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            await self._session.close()

    async def _request(self, method: str, url: str, *, expect: Iterable[int], **kwargs) -> dict:
        assert self._session is not None, "use the client as an async context manager"
        try:
            async with self._session.request(method, url, **kwargs) as resp:
                body = await resp.json(content_type=None) if resp.content_length != 0 else None
                if resp.status not in expect:
                    raise RouteError(f"{method} {url} answered {resp.status}: {body}")
                return body or {}
        except aiohttp.ClientError as exc:
            raise BindingError(f"{method} {url} failed: {exc}") from exc

    # -- tenancy -------------------------------------------------------------------

    async def create_entity(self, entity_id: str, *, name: str = "") -> None:
        await self._request("POST", f"{self.upload_url}/admin/entities", expect=(201,),
                            json={"id": entity_id, "kind": "user", "name": name or entity_id})

    async def create_key(self, entity_id: str) -> str:
        body = await self._request("POST", f"{self.upload_url}/admin/keys", expect=(201,),
                                   json={"name": f"eval {entity_id}", "entity_ids": [entity_id]})
        return body["key"]

    # -- ingestion -----------------------------------------------------------------

    async def put_document(self, entity_id: str, document: Document, *, source: str) -> dict:
        params = {"source": source}
        if document.title:
            params["title"] = document.title
        return await self._request(
            "PUT", f"{self.upload_url}/entities/{entity_id}/documents/{document.id}", expect=(202,),
            data=document.content.encode("utf-8"), params=params,
            headers={"Content-Type": "text/plain; charset=utf-8"})

    async def document(self, entity_id: str, document_id: str) -> dict:
        return await self._request("GET", f"{self.upload_url}/entities/{entity_id}/documents/{document_id}",
                                   expect=(200,))

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

    async def search(self, body: dict, server_timings: list[dict] | None = None) -> tuple[list[str], float]:
        """Ranked document ids (first occurrence of each) and the client-side wall time in ms.

        ``server_timings`` collects what the worker says it spent (``took_ms`` and its ``timings``),
        which tells worker time from HTTP and queueing time.
        """
        started = time.perf_counter()
        answer = await self._request("POST", f"{self.search_url}/search", expect=(200,), json=body)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if answer.get("cache") not in (None, "none"):
            raise RouteError(f"POST /search served a cached answer ({answer.get('cache')}) although the "
                             "request said cache: false; the latency would not be a real search")
        ranked = list(dict.fromkeys(r["document_id"] for r in answer.get("results", [])))
        if server_timings is not None:
            server_timings.append({"took_ms": answer.get("took_ms"), **(answer.get("timings") or {})})
        return ranked, elapsed_ms
