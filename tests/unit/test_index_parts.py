"""A descriptor's parts (tables) are scored by their own words, not by the descriptor's name repeated in each."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.selection import indices as ix


class SameVector:
    """Every text gets the same vector: the vector channel ties, so the words alone decide."""

    model_id = "same-vector"

    async def embed(self, texts):
        return np.ones((len(texts), 4), np.float32) / 2

    async def embed_query(self, text):
        return np.ones(4, np.float32) / 2


class Catalogue:
    """Answers the catalogue statements by their text, as the database would for one entity."""

    def __init__(self, rows, parts):
        self.answers = {ix.SQL["index_catalog"]: rows, ix.SQL["index_part_catalog"]: parts}

    async def fetch(self, sql, params):
        if sql == ix.SQL["catalog_versions"]:
            return [{"entity_id": e, "version": 1} for e in params["entity_ids"]]
        return [dict(r) for r in self.answers.get(sql, [])]


async def _catalogue(descriptors):
    embedder = SameVector()
    defs = [ix.parse_index(d, f"indices.{i}") for i, d in enumerate(descriptors)]
    vectors = await embedder.embed([d.embedded_text() for d in defs])
    rows = [{"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields),
             "profile": {}, "embedding": v} for d, v in zip(defs, vectors)]
    parts = [{"index_name": d.name, "part": p, "fields": f, "embedding": vectors[0]}
             for d in defs for p, f in ix.parts(d).items()]
    # fillers: BM25's idf needs a catalogue where "airline" and "flight" are not in every entry
    rows += [{"name": f"other_{i}", "kind": "external", "description": "", "fields": [f"t{i}.a", f"u{i}.b"],
              "profile": {}, "embedding": vectors[0]} for i in range(6)]
    parts += [{"index_name": f"other_{i}", "part": t, "fields": [c], "embedding": vectors[0]}
              for i in range(6) for t, c in ((f"t{i}", "a"), (f"u{i}", "b"))]
    ix._cache.clear()
    return Catalogue(rows, parts), embedder


@pytest.mark.asyncio
async def test_the_table_holding_both_words_wins_over_a_name_that_holds_one():
    # flight_data's table "airlines" holds "airline" only; its "flight" is the database's name.
    # travel's table "flights" holds both words of the question (its name and a column).
    db, embedder = await _catalogue([
        {"name": "flight_data", "fields": ["airlines.name", "airlines.country", "airports.city", "airports.code"]},
        {"name": "travel", "fields": ["flights.airline", "flights.number", "airports.city", "airports.code"]},
    ])
    answer = await ix.select(db, embedder, ["e"], ix.SelectRequest("Which airlines have at least 10 flights?", None, 3))
    assert [i["name"] for i in answer["indices"][:2]] == ["travel", "flight_data"]
    assert answer["indices"][0]["evidence"]["part"] == "flights"


def test_part_text_is_the_part_and_its_fields():
    assert ix.part_text("airlines", ["name", "countryCode"]) == "airlines: Fields: name, country code"


def test_descriptors_with_parts_are_embedded_again_when_the_part_text_changes():
    with_parts = ix.parse_index({"name": "db", "fields": ["a.x", "b.y"]}, "i")
    plain = ix.parse_index({"name": "db", "fields": ["x", "y"]}, "i")
    before, plain_before = ix.content_hash(with_parts, "m"), ix.content_hash(plain, "m")
    ix.PART_TEXT_VERSION, saved = ix.PART_TEXT_VERSION + 1, ix.PART_TEXT_VERSION
    try:
        assert ix.content_hash(with_parts, "m") != before
        assert ix.content_hash(plain, "m") == plain_before   # no parts: nothing to embed again
    finally:
        ix.PART_TEXT_VERSION = saved
