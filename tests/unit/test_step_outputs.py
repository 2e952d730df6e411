"""Step outputs of the ingest workflow survive their checkpoint: JSON out, the same object back."""

from __future__ import annotations

import json

import pytest
from edgeindex.ingest.workflow import (
    Chunked,
    Diffed,
    Embedded,
    Extracted,
    StaleDeleted,
    Summarized,
    Upserted,
)

OUTPUTS = [
    Extracted(size_bytes=10, content_hash="ab", text={"key": "artifacts/x/text.txt"}, chars=9, title="T"),
    Extracted(size_bytes=10, content_hash="ab", unchanged=True),
    Chunked(chunks={"key": "artifacts/x/chunks.json"}, count=3),
    Diffed(plan={"key": "artifacts/x/diff.json"}, embed=1, reused=2, moved=0, stale=1),
    Embedded(vectors={"key": "artifacts/x/vectors.f32"}, count=1, model_id="m", dimension=384),
    Summarized(summary="s", method="extractive"),
    Upserted(outcome="ready", chunk_count=3, replaced_version=1, replaced_object="docs/e/=ZA/v1/d"),
    Upserted(outcome="superseded", current_version=4),
    StaleDeleted(objects_deleted=1, artifacts_deleted=4, runs_deleted=0),
]


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda o: type(o).__name__)
def test_an_output_round_trips_through_its_json_checkpoint(output):
    stored = json.loads(json.dumps(output.to_json()))
    assert type(output).from_json(stored) == output


def test_artifact_keys_are_the_references_an_output_holds():
    assert OUTPUTS[0].artifact_keys() == ["artifacts/x/text.txt"]
    assert OUTPUTS[1].artifact_keys() == []


def test_a_checkpoint_written_before_the_types_still_loads():
    # the dict the workflow stored before its outputs were typed
    old = {"outcome": "ready", "chunk_count": 5, "embedded": 1, "reused": 4, "moved": 0, "stale": 0,
           "cache_entries_invalidated": 2, "replaced_version": None, "replaced_object": None}
    assert Upserted.from_json(old).chunk_count == 5
