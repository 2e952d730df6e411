"""A select embeds its query while it reads the catalogue (selection/overlap.py).

The real tools.select and indices.select run over an in-memory stand-in for Postgres whose
catalogue statements only answer once the query embedding has started, and an embedder that
records when it starts. Sequential code (catalogue, then embedding) never gets an answer and
fails on the timeout. Also checked: the answer is the one the same request gets without the
overlap's reordering, a failed catalogue read surfaces as the request's error with the
embedding stopped, and an empty registry answers without waiting for the model.
"""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np
import pytest
from edgeindex.selection import indices as ix
from edgeindex.selection import tools as tl
from edgeindex.selection.aliases import alias_for
from edgeindex.selection.definitions import count_tokens, parse_tool

WAIT = 5.0
TOOLS = [
    {"name": "get_weather", "description": "Current weather forecast for a city."},
    {"name": "send_email", "description": "Send an email message to a recipient."},
    {"name": "stock_price", "description": "Latest trading price of a stock ticker."},
    {"name": "resize_image", "description": "Resize a picture to a width and height."},
    {"name": "search_flights", "description": "Find airline flights between two airports."},
    {"name": "translate_text", "description": "Translate text between languages."},
    {"name": "compute_bmi", "description": "Body mass index from height and weight."},
]
INDICES = [
    {"name": "support_tickets", "kind": "collection", "description": "Customer support tickets and replies.",
     "fields": ["ticket_id", "customer", "status"], "profile": {}},
    {"name": "product_catalog", "kind": "collection", "description": "Products with prices and stock.",
     "fields": ["sku", "price", "title"], "profile": {}},
    {"name": "flight_schedule", "kind": "table", "description": "Departures and arrivals of flights.",
     "fields": ["flight_no", "airport", "departure"], "profile": {}},
]


def vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
    return v / np.linalg.norm(v)


class Embedder:
    """Deterministic vectors; ``started`` is set when a query embedding begins. ``hold`` keeps it running."""

    model_id = "test-hash-embedder"

    def __init__(self, *, hold: asyncio.Event | None = None) -> None:
        self.started = asyncio.Event()
        self.hold = hold
        self.finished = 0
        self.cancelled = 0

    async def embed_query(self, text: str) -> np.ndarray:
        self.started.set()
        try:
            if self.hold is not None:
                await asyncio.wait_for(self.hold.wait(), WAIT)
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return vector(text)


class DB:
    """The catalogue statements of tools.sql; the version lookup waits for the embedding to start."""

    def __init__(self, embedder: Embedder, *, tools: list[dict] | None = None, indices: list[dict] | None = None,
                 fail: Exception | None = None, wait_for_embedding: bool = True) -> None:
        self.embedder, self.fail, self.wait_for_embedding = embedder, fail, wait_for_embedding
        self.names = {text: name for name, text in tl.SQL.items()}
        self.tools = tools or []
        self.indices = indices or []

    async def fetch(self, sql: str, params: dict) -> list[dict]:
        name = self.names[sql]
        if name in ("catalog_versions_of", "catalog_versions"):
            if self.wait_for_embedding:
                await asyncio.wait_for(self.embedder.started.wait(), WAIT)
            if self.fail is not None:
                raise self.fail
            return []
        if name == "tool_catalog":
            rows = []
            for i, t in enumerate(self.tools):
                d = parse_tool(t, f"tools[{i}]")
                rows.append({"name": d.name, "alias": alias_for(d.name), "description": d.description,
                       "parameters": d.parameters,
                             "category": d.category, "tags": list(d.tags), "requires": list(d.requires),
                             "tokens": count_tokens(d.function()), "model_id": Embedder.model_id,
                             "embedding": vector(d.embedded_text()), "description_embedding": None,
                             "used": 0, "shown": 0})
            return rows
        if name == "index_catalog":
            return [{**r, "fields": list(r["fields"]), "embedding": vector(r["name"] + " " + r["description"])}
                    for r in self.indices]
        if name in ("tool_example_vectors", "index_part_catalog"):
            return []
        raise AssertionError(f"unexpected statement {name}")


@pytest.fixture(autouse=True)
def fresh_caches():
    tl._cache.clear()
    ix._cache.clear()
    yield
    tl._cache.clear()
    ix._cache.clear()


async def cancelled(emb: Embedder) -> None:
    """Wait (bounded) for the embedding to see its cancellation: it reaches the task a few loop turns later."""
    for _ in range(200):
        if emb.cancelled:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the query embedding was never cancelled")


def tool_request(query: str) -> tl.SelectRequest:
    return tl.SelectRequest(query, None, 3, tl.DEFAULT_THRESHOLD, True, True, True)


def comparable(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k not in ("took_ms", "timings", "catalogue")}


async def test_tool_select_reads_the_catalogue_while_the_query_is_embedded():
    emb = Embedder()
    answer = await tl.select(DB(emb, tools=TOOLS), emb, ["e"], tool_request("what is the weather in Paris"))
    assert emb.finished == 1 and answer["count"] >= 1
    assert set(answer["timings"]) == {"catalogue_ms", "embed_ms", "score_ms"}


async def test_tool_select_answers_as_without_the_overlap():
    query = "Send an email to Bob. Then find flights from Paris to Rome tomorrow morning."
    emb = Embedder()
    overlapped = await tl.select(DB(emb, tools=TOOLS), emb, ["e"], tool_request(query))
    tl._cache.clear()
    emb = Embedder()
    emb.started.set()   # the catalogue read does not wait: catalogue first, then the embedding, without the overlap
    sequential = await tl.select(DB(emb, tools=TOOLS, wait_for_embedding=False), emb, ["e"], tool_request(query))
    assert overlapped["count"] >= 2
    assert comparable(overlapped) == comparable(sequential)


async def test_a_failed_catalogue_read_is_the_tool_select_error_and_stops_the_embedding():
    hold = asyncio.Event()
    emb = Embedder(hold=hold)
    with pytest.raises(RuntimeError, match="database went away"):
        await tl.select(DB(emb, tools=TOOLS, fail=RuntimeError("database went away")), emb, ["e"],
                        tool_request("weather in Paris"))
    await cancelled(emb)
    assert emb.finished == 0


async def test_an_empty_tool_registry_answers_without_waiting_for_the_model():
    hold = asyncio.Event()   # never set: an answer that waited for the model would time out
    emb = Embedder(hold=hold)
    answer = await asyncio.wait_for(tl.select(DB(emb), emb, ["e"], tool_request("weather in Paris")), 1.0)
    assert answer["fallback"] == "empty_registry" and answer["tools"] == []
    await cancelled(emb)
    assert emb.finished == 0


async def test_index_select_reads_the_catalogue_while_the_query_is_embedded():
    emb = Embedder()
    answer = await ix.select(DB(emb, indices=INDICES), emb, ["e"],
                             ix.SelectRequest("flights departing from an airport", None, 3))
    assert emb.finished == 1
    assert answer["indices"][0]["name"] == "flight_schedule"


async def test_index_select_with_a_given_vector_embeds_nothing():
    emb = Embedder()
    answer = await ix.select(DB(emb, indices=INDICES, wait_for_embedding=False), emb, ["e"],
                             ix.SelectRequest("flights departing from an airport", None, 3),
                             vector=vector("flights departing from an airport"))
    assert not emb.started.is_set() and answer["count"] == 3


async def test_a_failed_catalogue_read_is_the_index_select_error_and_stops_the_embedding():
    emb = Embedder(hold=asyncio.Event())
    with pytest.raises(RuntimeError, match="database went away"):
        await ix.select(DB(emb, indices=INDICES, fail=RuntimeError("database went away")), emb, ["e"],
                        ix.SelectRequest("flights", None, 3))
    await cancelled(emb)
    assert emb.finished == 0


async def test_an_empty_index_registry_answers_without_waiting_for_the_model():
    emb = Embedder(hold=asyncio.Event())
    answer = await asyncio.wait_for(ix.select(DB(emb), emb, ["e"], ix.SelectRequest("flights", None, 3)), 1.0)
    assert answer["indices"] == [] and answer["registry_size"] == 0
    await cancelled(emb)
    assert emb.finished == 0
