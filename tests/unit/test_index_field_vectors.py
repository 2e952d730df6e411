"""A descriptor's fields are embedded one by one and a request is scored against them too."""

from __future__ import annotations

import numpy as np
import pytest
from edgeindex.selection import field_vectors as fv
from edgeindex.selection import indices as ix


def test_top_mean_is_the_mean_of_each_groups_best_values():
    rng = np.random.default_rng(7)
    groups = np.sort(rng.integers(0, 9, 200))
    values = rng.uniform(-1, 1, 200).astype(np.float32)
    for top in (1, 2, 5):
        mean, has = fv.top_mean(values, groups, 11, top)
        for g in range(11):
            own = np.sort(values[groups == g])[::-1][:top]
            assert has[g] == (own.size > 0)
            assert mean[g] == pytest.approx(own.mean() if own.size else 0.0, abs=1e-6)


def test_top_mean_does_not_need_groups_in_order():
    values = np.asarray([0.1, 0.9, 0.5, 0.7, 0.3], np.float32)
    mean, has = fv.top_mean(values, np.asarray([1, 0, 1, 0, 1]), 3, 2)
    assert mean.tolist() == pytest.approx([0.8, 0.4, 0.0])
    assert has.tolist() == [True, True, False]


def test_field_texts_of_tables_are_their_columns_with_the_table_and_leave_the_table_names_out():
    index = ix.parse_index({"name": "world", "tables": ["country", "city"],
                            "fields": ["country.SurfaceArea", "city.name"]}, "i")
    assert ix.field_plan(index) == [("country surface area", "country", "country.SurfaceArea"),
                                    ("city name", "city", "city.name")]


def test_plain_fields_carry_the_last_segment_of_the_descriptors_name():
    index = ix.parse_index({"name": "concert_singer.singer", "fields": ["Name", "singer_id"]}, "i")
    assert ix.field_plan(index) == [("singer name", None, "Name"), ("singer id", None, "singer_id")]


def test_at_most_max_field_vectors_fields_are_embedded():
    index = ix.parse_index({"name": "wide", "fields": [f"c{i}" for i in range(fv.MAX_FIELD_VECTORS + 40)]}, "i")
    assert len(ix.field_plan(index)) == fv.MAX_FIELD_VECTORS


def test_a_stored_matrix_made_for_other_fields_is_not_used():
    blob = fv.pack(np.ones((3, 4), np.float32))
    assert fv.unpack(blob, 3, 4).shape == (3, 4)
    assert fv.unpack(blob, 2, 4) is None
    assert fv.unpack(None, 3, 4) is None


def test_descriptors_with_fields_are_embedded_again_when_the_field_text_changes():
    index = ix.parse_index({"name": "db", "fields": ["x", "y"]}, "i")
    empty = ix.parse_index({"name": "db", "description": "no fields"}, "i")
    before, empty_before = ix.content_hash(index, "m"), ix.content_hash(empty, "m")
    fv.FIELD_TEXT_VERSION, saved = fv.FIELD_TEXT_VERSION + 1, fv.FIELD_TEXT_VERSION
    try:
        assert ix.content_hash(index, "m") != before
        assert ix.content_hash(empty, "m") == empty_before
    finally:
        fv.FIELD_TEXT_VERSION = saved


class KeyedVectors:
    """The field "nation surface area" alone and the question point one way, every other text (a whole
    descriptor, a table with all its columns) another way: only a field vector can tell."""

    model_id = "keyed"

    def _one(self, text):
        return np.asarray([1.0, 0.0] if text == "nation surface area" or "biggest" in text else [0.0, 1.0], np.float32)

    async def embed(self, texts):
        return np.vstack([self._one(t) for t in texts]) if texts else np.zeros((0, 2), np.float32)

    async def embed_query(self, text):
        return self._one(text)


class Catalogue:
    def __init__(self, rows, parts):
        self.answers = {ix.SQL["index_catalog"]: rows, ix.SQL["index_part_catalog"]: parts}

    async def fetch(self, sql, params):
        if sql == ix.SQL["catalog_versions"]:
            return [{"entity_id": e, "version": 1} for e in params["entity_ids"]]
        return [dict(r) for r in self.answers.get(sql, [])]


async def _catalogue(descriptors, *, with_field_vectors=True):
    embedder = KeyedVectors()
    defs = [ix.parse_index(d, f"indices.{i}") for i, d in enumerate(descriptors)]
    rows, parts = [], []
    for d in defs:
        texts = [f.text for f in ix.field_plan(d)]
        rows.append({"name": d.name, "kind": d.kind, "description": d.description, "fields": list(d.fields),
                     "profile": {}, "embedding": (await embedder.embed([d.embedded_text()]))[0],
                     "field_vectors": fv.pack(await embedder.embed(texts)) if with_field_vectors else None})
        parts += [{"index_name": d.name, "part": p, "fields": f,
                   "embedding": (await embedder.embed([ix.part_text(p, f)]))[0]} for p, f in ix.parts(d).items()]
    ix._cache.clear()
    return Catalogue(rows, parts), embedder


DESCRIPTORS = [
    # both hold a table of nations with a name; only geo_b's columns hold the surface area, which its whole
    # text (one vector of every table) and its table's text do not show in this embedder
    {"name": "geo_a", "fields": ["nation.name", "nation.code", "river.name", "river.length"]},
    {"name": "geo_b", "fields": ["nation.name", "nation.SurfaceArea", "river.name", "river.length"]},
    *[{"name": f"other_{i}", "fields": [f"t{i}.a", f"u{i}.b"]} for i in range(6)],
]


@pytest.mark.asyncio
async def test_the_descriptor_whose_field_is_close_to_the_question_comes_first():
    db, embedder = await _catalogue(DESCRIPTORS)
    answer = await ix.select(db, embedder, ["e"], ix.SelectRequest("Which nation is the biggest?", None, 3))
    assert answer["indices"][0]["name"] == "geo_b"


@pytest.mark.asyncio
async def test_without_field_vectors_a_descriptor_stands_for_its_own_field():
    db, embedder = await _catalogue(DESCRIPTORS, with_field_vectors=False)
    answer = await ix.select(db, embedder, ["e"], ix.SelectRequest("Which nation is the biggest?", None, 3))
    # the vectors do not tell the two apart, and geo_a's shorter text holds "nation" a little more in BM25
    assert [i["name"] for i in answer["indices"][:2]] == ["geo_a", "geo_b"]


def test_matvec_in_slices_is_the_whole_product():
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((fv.BLOCK_ELEMENTS // 64 * 2 + 17, 64)).astype(np.float32)
    vector = rng.standard_normal(64).astype(np.float32)
    assert np.allclose(fv.matvec(matrix, vector), matrix @ vector, atol=1e-5)


@pytest.mark.asyncio
async def test_the_closest_fields_are_the_evidence_of_the_field_score():
    db, embedder = await _catalogue(DESCRIPTORS)
    answer = await ix.select(db, embedder, ["e"], ix.SelectRequest("Which nation is the biggest?", None, 3))
    assert answer["indices"][0]["evidence"]["closest_fields"][0] == "nation.SurfaceArea"
    db, embedder = await _catalogue(DESCRIPTORS, with_field_vectors=False)
    answer = await ix.select(db, embedder, ["e"], ix.SelectRequest("Which nation is the biggest?", None, 3))
    assert answer["indices"][0]["evidence"]["closest_fields"] == []
