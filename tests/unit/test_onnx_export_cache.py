"""Which query-encoder export the cache holds (``bindings/onnx_query._cached_export``): a fused export that
failed leaves the plain one under the plain key only, so a later load tries the fused export again instead
of taking the fallback for it. The exporters are replaced by ones that write a marker file: what is tested
is the cache's bookkeeping, not torch's exporters."""

from __future__ import annotations

import pytest
from edgeindex.bindings import onnx_query


class Exporters:
    def __init__(self, monkeypatch) -> None:
        self.fused_fails = True
        self.calls: list[str] = []
        monkeypatch.setattr(onnx_query, "_export_fused", self._fused)
        monkeypatch.setattr(onnx_query, "_export_dynamo", self._dynamo)

    def _fused(self, model, scratch) -> None:
        self.calls.append("fused")
        (scratch / "model.onnx").write_text("half-written fused graph")
        if self.fused_fails:
            raise RuntimeError("no attention was fused")

    def _dynamo(self, model, scratch) -> None:
        self.calls.append("plain")
        (scratch / "model.onnx").write_text("plain graph")


@pytest.fixture
def folders(tmp_path):
    return tmp_path / "onnx" / "m-fusedkey", tmp_path / "onnx" / "m-plainkey"


def test_a_failed_fused_export_is_not_cached_under_the_fused_key(monkeypatch, folders):
    exporters = Exporters(monkeypatch)
    fused, plain = folders
    assert onnx_query._cached_export(None, fused, plain) == plain
    assert not fused.exists()  # nothing, not even the failed attempt's half-written graph
    assert onnx_query.export_variant(plain) == onnx_query.PLAIN_VARIANT
    assert (plain / "model.onnx").read_text() == "plain graph"

    exporters.fused_fails = False  # the failure passed (memory, a killed export): the next load fuses
    assert onnx_query._cached_export(None, fused, plain) == fused
    assert onnx_query.export_variant(fused) == onnx_query.FUSED_VARIANT
    assert exporters.calls == ["fused", "plain", "fused"]
    assert onnx_query._cached_export(None, fused, plain) == fused  # cached now: nothing exported again
    assert exporters.calls == ["fused", "plain", "fused"]


def test_a_fused_export_that_keeps_failing_is_given_up_after_a_few_loads(monkeypatch, folders):
    exporters = Exporters(monkeypatch)
    fused, plain = folders
    for _ in range(onnx_query.FUSED_ATTEMPTS + 2):
        assert onnx_query._cached_export(None, fused, plain) == plain
    assert exporters.calls == ["fused", "plain"] + ["fused"] * (onnx_query.FUSED_ATTEMPTS - 1)


def test_a_plain_export_an_older_version_left_under_the_fused_key_is_moved_aside(monkeypatch, folders):
    exporters = Exporters(monkeypatch)
    exporters.fused_fails = False
    fused, plain = folders
    fused.mkdir(parents=True)
    (fused / "model.onnx").write_text("plain graph of an older cache")
    (fused / "variant").write_text(onnx_query.PLAIN_VARIANT + "\n")
    assert onnx_query._cached_export(None, fused, plain) == fused
    assert onnx_query.export_variant(fused) == onnx_query.FUSED_VARIANT
    assert (plain / "model.onnx").read_text() == "plain graph of an older cache"
    assert exporters.calls == ["fused"]


@pytest.mark.parametrize("files", [["model.onnx"], ["config.json", "reference.npy"]])
def test_a_process_that_loses_the_race_to_write_a_folder_uses_the_winners(tmp_path, files):
    """Two workers start on a fresh cache and write the same folder (an export, or the dequantized e5
    model, which has no model.onnx): the one whose rename comes second takes the first one's folder."""
    target = tmp_path / "models" / "m-key"

    def export(scratch):
        winner = tmp_path / "models" / ".winner"  # the other process finishes while this one writes
        winner.mkdir()
        for name in files:
            (winner / name).write_text("winner")
        (winner / "variant").write_text("v\n")
        winner.rename(target)
        for name in files:
            (scratch / name).write_text("loser")

    onnx_query._write(target, "v", export)
    assert sorted(p.name for p in target.iterdir()) == sorted([*files, "variant"])
    assert {(target / name).read_text() for name in files} == {"winner"}
    assert [p.name for p in target.parent.iterdir()] == ["m-key"]  # the loser's scratch is gone


def test_a_folder_that_is_in_the_way_but_not_whole_is_an_error(tmp_path):
    target = tmp_path / "models" / "m-key"
    target.mkdir(parents=True)
    (target / "stray").write_text("not a finished folder")
    with pytest.raises(OSError):
        onnx_query._write(target, "v", lambda scratch: (scratch / "model.onnx").write_text("graph"))
