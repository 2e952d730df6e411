"""Hash-diff: which chunks keep their rows and vectors, which move, which are embedded, which go."""

from __future__ import annotations

from edgeindex.ingest.chunking import Chunk, content_hash
from edgeindex.ingest.diff import DiffPlan, StoredChunk, plan

MODEL = "model-a"


def chunks_of(*contents: str) -> list[Chunk]:
    out, offset = [], 0
    for i, content in enumerate(contents):
        out.append(Chunk(i, offset, offset + len(content), 1, content_hash(content)))
        offset += len(content) + 2
    return out


def stored_from(chunks: list[Chunk], *, model: str = MODEL) -> list[StoredChunk]:
    return [StoredChunk(f"id-{c.position}", c.position, c.start, c.end, c.hash, model) for c in chunks]


def new_id(position: int) -> str:
    return f"new-{position}"


def test_first_version_embeds_everything():
    result = plan(chunks_of("a", "b"), [], model_id=MODEL, new_id=new_id)
    assert result.ids == ["new-0", "new-1"] and result.embed == [0, 1]
    assert result.moved == [] and result.stale == [] and result.reused == 0


def test_unchanged_document_reuses_everything():
    chunks = chunks_of("a", "b", "c")
    result = plan(chunks, stored_from(chunks), model_id=MODEL, new_id=new_id)
    assert result.ids == ["id-0", "id-1", "id-2"]
    assert result.embed == [] and result.moved == [] and result.stale == [] and result.reused == 3


def test_one_changed_chunk_is_the_only_one_embedded():
    old = chunks_of("alpha", "beta", "gamma")
    result = plan(chunks_of("alpha", "BETA", "gamma"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.ids == ["id-0", "new-1", "id-2"]
    assert result.embed == [1] and result.stale == ["id-1"] and result.reused == 2
    assert result.moved == []  # same length: "gamma" keeps its offsets


def test_changed_length_moves_the_chunks_after_it():
    old = chunks_of("alpha", "beta", "gamma")
    result = plan(chunks_of("alpha", "a longer beta", "gamma"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.embed == [1] and result.stale == ["id-1"]
    assert result.moved == ["id-2"]  # same content, new offsets: a position update, no embedding


def test_inserted_chunk_shifts_positions_without_embedding_the_rest():
    old = chunks_of("a", "b", "c")
    result = plan(chunks_of("new", "a", "b", "c"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.ids == ["new-0", "id-0", "id-1", "id-2"]
    assert result.embed == [0] and result.stale == []
    assert result.moved == ["id-0", "id-1", "id-2"]


def test_removed_chunk_is_stale():
    old = chunks_of("a", "b", "c")
    result = plan(chunks_of("a", "c"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.ids == ["id-0", "id-2"] and result.embed == [] and result.stale == ["id-1"]


def test_reordered_chunks_are_moved_not_embedded():
    old = chunks_of("a", "b")
    result = plan(chunks_of("b", "a"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.ids == ["id-1", "id-0"] and result.embed == [] and sorted(result.moved) == ["id-0", "id-1"]


def test_repeated_content_keeps_one_row_per_occurrence():
    old = chunks_of("same", "x", "same")
    result = plan(chunks_of("same", "same", "same"), stored_from(old), model_id=MODEL, new_id=new_id)
    assert result.ids == ["id-0", "id-2", "new-2"]  # matched in document order
    assert result.embed == [2] and result.stale == ["id-1"]


def test_vectors_of_another_model_are_never_reused():
    chunks = chunks_of("a", "b")
    result = plan(chunks, stored_from(chunks, model="model-b"), model_id=MODEL, new_id=new_id)
    assert result.embed == [0, 1] and result.stale == ["id-0", "id-1"]


def test_plan_json_round_trip():
    result = plan(chunks_of("a", "b"), stored_from(chunks_of("b")), model_id=MODEL, new_id=new_id)
    assert DiffPlan.from_json(result.to_json()) == result
