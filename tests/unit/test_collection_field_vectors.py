"""A collection's field vectors follow its fields: kept when they stay, made only for the new ones."""

from __future__ import annotations

import numpy as np
from edgeindex.selection import collections as col
from edgeindex.selection import field_vectors as fv
from edgeindex.selection.indices import IndexDef


class Counting:
    """A deterministic embedder that records every text it is asked to embed."""
    model_id = "test-model"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def embed(self, texts):
        self.seen.extend(texts)
        out = np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


async def _stored(embedder, fields):
    index = IndexDef("support", "", tuple(fields), "collection")
    matrix, field_hash, embedded = await col._field_vectors(embedder, index, None, 8)
    return {"fields": list(fields), "field_vectors": fv.pack(matrix), "field_hash": field_hash}, embedded


async def test_only_new_fields_are_embedded_and_kept_rows_are_reused():
    embedder = Counting()
    row, embedded = await _stored(embedder, ["ticket_id", "customer.email"])
    assert embedded == 2 and embedder.seen == ["support ticket id", "support customer email"]
    old = fv.unpack(row["field_vectors"], 2, 8)

    embedder.seen.clear()
    index = IndexDef("support", "", ("refund_amount", "customer.email", "ticket_id"), "collection")
    matrix, field_hash, embedded = await col._field_vectors(embedder, index, row, 8)
    assert embedded == 1 and embedder.seen == ["support refund amount"]
    assert matrix[1].tobytes() == old[1].tobytes() and matrix[2].tobytes() == old[0].tobytes()
    assert field_hash != row["field_hash"]

    embedder.seen.clear()   # the same fields: nothing embedded, the same hash
    same = IndexDef("support", "", ("ticket_id", "customer.email"), "collection")
    assert (await col._field_vectors(embedder, same, row, 8))[1:] == (row["field_hash"], 0)
    assert embedder.seen == []


async def test_vectors_of_another_model_or_another_text_version_are_not_reused():
    embedder = Counting()
    row, _ = await _stored(embedder, ["ticket_id"])
    embedder.seen.clear()
    other = Counting()
    other.model_id = "other-model"
    index = IndexDef("support", "", ("ticket_id",), "collection")
    assert (await col._field_vectors(other, index, row, 8))[2] == 1   # the stored hash names another model
    stale = {**row, "field_hash": "made-by-other-texts"}
    assert (await col._field_vectors(embedder, index, stale, 8))[2] == 1


async def test_a_collection_without_json_fields_has_no_field_vectors():
    matrix, field_hash, embedded = await col._field_vectors(Counting(), IndexDef("notes", "", (), "collection"),
                                                            None, 8)
    assert matrix is None and field_hash is None and embedded == 0
