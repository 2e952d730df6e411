"""A tool feedback refreshes the catalogue's learned layer alone: no rebuild, no re-embedding.

The real selection code (tools.select, tools.feedback, the catalogue cache) runs over an
in-memory stand-in for Postgres that answers the named statements and counts them, and a
deterministic embedder that counts the texts it embeds.
"""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import asynccontextmanager

import numpy as np
import pytest
from edgeindex.selection import tools as tl
from edgeindex.selection.aliases import alias_for
from edgeindex.selection.definitions import count_tokens, parse_tool

SQL = {text: name for name, text in tl.SQL.items()}
TOOLS = [
    {"name": "get_weather", "description": "Current weather forecast for a city."},
    {"name": "send_email", "description": "Send an email message to a recipient."},
    {"name": "stock_price", "description": "Latest trading price of a stock ticker."},
    {"name": "resize_image", "description": "Resize a picture to a width and height."},
    {"name": "search_flights", "description": "Find airline flights between two airports."},
    {"name": "translate_text", "description": "Translate text between languages."},
    {"name": "compute_bmi", "description": "Body mass index from height and weight."},
]


class Embedder:
    model_id = "test-hash-embedder"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
        return v / np.linalg.norm(v)

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.vstack([self._vector(t) for t in texts])

    async def embed_query(self, text: str) -> np.ndarray:
        self.texts.append(text)
        return self._vector(text)


class Rows:
    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    async def fetchone(self) -> dict | None:
        return self.rows[0] if self.rows else None


class MemoryDB:
    """Just enough of tools.sql, kept in dicts; ``calls`` counts each named statement."""

    def __init__(self, embedder: Embedder) -> None:
        self.calls: dict[str, int] = {}
        self.versions: dict[tuple[str, str], int] = {}
        self.feedback: dict[str, list[int]] = {}
        self.examples: list[dict] = []
        self.model_id = embedder.model_id
        defs = [parse_tool(t, f"tools[{i}]") for i, t in enumerate(TOOLS)]
        self.tools = [{"name": d.name, "alias": alias_for(d.name), "description": d.description,
                       "parameters": d.parameters,
                       "category": d.category, "tags": list(d.tags), "requires": list(d.requires),
                       "tokens": count_tokens(d.function()), "model_id": embedder.model_id,
                       "embedding": embedder._vector(d.embedded_text()), "description_embedding": None}
                      for d in defs]

    def _run(self, sql: str, p: dict) -> list[dict]:
        name = SQL[sql]
        self.calls[name] = self.calls.get(name, 0) + 1
        if name == "serving_model_share":
            return [{"model_id": self.model_id}]
        if name == "catalog_versions_of":
            return [{"entity_id": e, "kind": k, "version": v} for (e, k), v in self.versions.items()
                    if e in p["entity_ids"] and k in p["kinds"]]
        if name == "tool_catalog":
            return [{**t, "used": self.feedback.get(t["name"], [0, 0])[0],
                     "shown": self.feedback.get(t["name"], [0, 0])[1]} for t in self.tools]
        if name == "tool_example_vectors":
            return [dict(e) for e in self.examples]
        if name == "tool_feedback_counts":
            return [{"name": n, "used": u, "shown": s} for n, (u, s) in self.feedback.items()]
        if name == "tool_learned_vectors":
            return [{"name": e["name"], "embedding": e["embedding"]} for e in self.examples
                    if e["source"] == "feedback" and e["name"] in p["names"]]
        if name == "tool_feedback_add":
            counts = self.feedback.setdefault(p["name"], [0, 0])
            counts[0] += p["used"]
            counts[1] += p["shown"]
        elif name == "tool_example_insert":
            self.examples.append({"name": p["name"], "source": p["source"], "embedding": p["embedding"]})
        elif name == "catalog_bump":
            key = (p["entity_id"], p["kind"])
            self.versions[key] = self.versions.get(key, 0) + 1
        return []

    async def fetch(self, sql: str, p: dict) -> list[dict]:
        return self._run(sql, p)

    async def execute(self, sql: str, p: dict | None = None) -> Rows:
        return Rows(self._run(sql, p or {}))

    @asynccontextmanager
    async def transaction(self):
        yield self


def _select(db, emb, query: str) -> dict:
    request = tl.SelectRequest(query, None, 3, tl.DEFAULT_THRESHOLD, True, True, True)
    return asyncio.run(tl.select(db, emb, ["e"], request))


@pytest.fixture
def setup():
    tl._cache.clear()
    emb = Embedder()
    yield MemoryDB(emb), emb
    tl._cache.clear()


def test_feedback_refreshes_the_learned_layer_without_rebuilding_or_reembedding(setup):
    db, emb = setup
    query = "do the usual friday morning check for the finance team"
    first = _select(db, emb, query)
    assert first["catalogue"]["state"] == "built" and db.calls["tool_catalog"] == 1
    assert _select(db, emb, query)["catalogue"]["state"] == "cached"
    built = tl._cache._entries[(("e", 0),)][1]

    emb.texts.clear()
    answer = asyncio.run(tl.feedback(db, emb, ["e"], {"query": query, "used": ["stock_price"],
                                                       "selected": ["get_weather"]}))
    assert answer["embedded"] == 1 and emb.texts == [query]      # the request alone, no tool text

    emb.texts.clear()
    after = _select(db, emb, query)
    assert after["catalogue"] == {"state": "refreshed", "refreshed_tools": 1}
    assert emb.texts == [query]                                  # only the request is embedded
    assert db.calls["tool_catalog"] == 1 and db.calls["tool_example_vectors"] == 1   # never read again
    refreshed = tl._cache._entries[(("e", 0),)][1]
    # the structure is shared, not rebuilt: same BM25 index and tool matrix objects
    assert refreshed.catalogue.bm25 is built.catalogue.bm25
    assert refreshed.catalogue.vectors is built.catalogue.vectors
    stock = refreshed.by_name[("e", "stock_price")]
    weather = refreshed.by_name[("e", "get_weather")]
    assert refreshed.catalogue.prior[stock] > 0 and refreshed.catalogue.prior[weather] == 0
    assert after["tools"][0]["name"] == "stock_price"            # the learned example counts at once
    assert _select(db, emb, query)["catalogue"]["state"] == "cached"


def test_a_refresh_matches_a_full_build_of_the_same_state(setup):
    db, emb = setup
    _select(db, emb, "warm up")
    for used, query in [("stock_price", "finance check"), ("stock_price", "how is ACME doing"),
                        ("send_email", "ping the team")]:
        asyncio.run(tl.feedback(db, emb, ["e"], {"query": query, "used": [used], "selected": ["compute_bmi"]}))
        _select(db, emb, "anything at all")
    refreshed = tl._cache._entries[(("e", 0),)][1]
    tl._cache.clear()
    _select(db, emb, "anything at all")
    rebuilt = tl._cache._entries[(("e", 0),)][1]
    assert rebuilt.catalogue.prior.tolist() == refreshed.catalogue.prior.tolist()
    probe = emb._vector("how is ACME doing")
    assert (rebuilt.catalogue.score("how is ACME doing", probe).fused.tolist()
            == pytest.approx(refreshed.catalogue.score("how is ACME doing", probe).fused.tolist()))


def test_a_changed_definition_still_rebuilds(setup):
    db, emb = setup
    _select(db, emb, "weather")
    db.versions[("e", tl.KIND)] = 1
    db.tools[0] = {**db.tools[0], "description": "Weather and tides for a harbour."}
    again = _select(db, emb, "weather")
    assert again["catalogue"]["state"] == "built" and db.calls["tool_catalog"] == 2
